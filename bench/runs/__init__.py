"""The run kinds: one process, a distributed run, the largest-batch probe, the harness-fidelity check."""
