"""Per-rank timelines: union of active intervals, overlap of computation and communication.

overlap = compute + communication - |union of all active intervals| (the issue's definition): the
seconds during which gradients travelled while the rank was still computing.
"""

from __future__ import annotations


def union_length(intervals) -> float:
    """Total length covered by (start, end) intervals, overlapping ones counted once."""
    total, end = 0.0, None
    for a, b in sorted((a, b) for a, b in intervals if b > a):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def step_phases(forward: tuple, backward_compute: tuple, update: tuple, comm: list, step: tuple) -> dict:
    """Phase seconds of one training step from its intervals (perf_counter seconds).

    backward_compute ends when the last gradient was ready (for DDP: its last bucket's hook);
    `comm` are the communication intervals (each bucket's all-reduce, or the explicit exchange).
    """
    compute = [forward, backward_compute, update]
    compute_s = union_length(compute)
    comm_s = union_length(comm)
    overlap = max(0.0, compute_s + comm_s - union_length(compute + list(comm)))
    total = step[1] - step[0]
    exposed = comm_s - overlap
    busy = (forward[1] - forward[0]) + (backward_compute[1] - backward_compute[0]) + (update[1] - update[0])
    return {
        "step_s": total,
        "forward_s": forward[1] - forward[0],
        "backward_s": backward_compute[1] - backward_compute[0],
        "update_s": update[1] - update[0],
        "comm_s": comm_s,
        "overlap_s": overlap,
        # what the step waited for the network: communication not hidden behind computation
        "exposed_comm_s": exposed,
        # the rest of the step: zero_grad, DDP's bookkeeping, waiting that no interval covers
        "other_s": max(0.0, total - busy - exposed),
    }
