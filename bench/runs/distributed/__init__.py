"""Distributed data-parallel training: a launcher owning every rank's process, emulated nodes
(network namespaces joined by a shaped veth link), per-rank workers for each framework, a
communication micro-benchmark and the alpha-beta scaling model.

The benchmark notebook stays the coordinator: `bench.runs.distributed.run.execute` starts the ranks
as plain processes, waits for them, and writes one record with a per-rank section.
"""
