"""The run kinds, one module each with the same entry point, `execute(config, results_dir, ...)` (TorchBench's
userbenchmark/<kind>/run.py): one process (`single`, a Record), a distributed run (`distributed.run`, a Record), the
largest-batch search (`maxbatch`, its search result) and the harness-fidelity check (`fidelity`, its comparison)."""
