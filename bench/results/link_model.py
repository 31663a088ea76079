"""The alpha-beta communication model and the step-time prediction built on it.

A message of M bytes costs alpha + M / B point to point (alpha: latency, B: bandwidth in bytes/s).
Ring all-reduce over N workers: 2(N-1) alpha + 2(N-1)/N x M/B. A parameter server with k servers
(gradients up, parameters down, every worker through the servers' links): max(2M/B, 2NM/(kB)) plus
2 alpha (BytePS, OSDI 2020, writes the same forms). Step time = compute + communication - overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The collective backend the link's micro-benchmark runs (bench/adapters/torch/netbench_worker.py): its fit predicts
# that backend's communication only (NCCL over NVLink or InfiniBand is another link altogether).
FIT_BACKEND = "gloo"


@dataclass(frozen=True)
class Link:
    alpha_s: float
    bandwidth_Bps: float
    r2: float | None = None
    source: str = ""
    backend: str = FIT_BACKEND  # the backend whose messages were timed (fits written before it was named: gloo's)

    def p2p_s(self, nbytes: float) -> float:
        return self.alpha_s + nbytes / self.bandwidth_Bps


def ring_allreduce_s(link: Link, workers: int, nbytes: float) -> float:
    if workers <= 1:
        return 0.0
    return 2 * (workers - 1) * link.alpha_s + 2 * (workers - 1) / workers * nbytes / link.bandwidth_Bps


def ps_s(link: Link, workers: int, nbytes: float, servers: int = 1) -> float:
    if workers <= 1:
        return 0.0
    return 2 * link.alpha_s + max(2 * nbytes, 2 * workers * nbytes / servers) / link.bandwidth_Bps


SMALL_BYTES = 1 << 20  # the micro-benchmark repeats messages up to this size more often (cheap, noisy)


def _line(x, t) -> tuple[float, float, float]:
    """t = a + b x the way MPI benchmarks read a link: the slope b from least squares over all sizes (the
    large messages dominate it), the latency a as the median excess over b x among latency-dominated
    messages, those whose bandwidth term b x is at most half their time (robust to one disturbed size; a
    token-bucket shaper lets mid-size messages through faster than its rate, and they would pull the
    latency to zero); the smallest message when none is. Never below 0. Returns (a, b, r2 of the line)."""
    x, t = np.asarray(x, float), np.asarray(t, float)
    b = max(float(np.polyfit(x, t, 1)[0]), 1e-15)
    latency_bound = b * x <= 0.5 * t
    if not latency_bound.any():
        latency_bound = x == x.min()
    a = max(0.0, float(np.median((t - b * x)[latency_bound])))
    pred = a + b * x
    ss = float(((t - t.mean()) ** 2).sum())
    return a, b, 1 - float(((t - pred) ** 2).sum()) / ss if ss > 0 else None


def fit_p2p(sizes, times, source: str = "") -> Link:
    """alpha and B from point-to-point one-way times t = alpha + M/B."""
    a, b, r2 = _line(sizes, times)
    return Link(a, 1 / b, r2, source)


def fit_allreduce(sizes, times, workers: int, source: str = "") -> Link:
    """alpha and B from ring all-reduce times of `workers` ranks: t = 2(N-1) alpha + 2(N-1)/N M/B."""
    a, b, r2 = _line(sizes, times)
    return Link(a / (2 * (workers - 1)), 2 * (workers - 1) / workers / b, r2, source)


def predict_step_s(kind: str | None, compute_s: float, link: Link, workers: int, grad_bytes: float,
                   overlap_share: float = 0.0) -> float:
    """compute + communication - overlap, the communication by the strategy's link model `kind` (bench/strategies/:
    'ring' all-reduce, 'ps' through a parameter server, None: none, the step is its compute)."""
    if kind is None:
        return compute_s
    if kind == "ring":
        comm = ring_allreduce_s(link, workers, grad_bytes)
    elif kind == "ps":
        comm = ps_s(link, workers, grad_bytes)
    else:
        raise ValueError(f"link model {kind!r}: valid choices 'ring', 'ps' or None")
    return compute_s + comm * (1 - overlap_share)


def efficiency(compute_s: float, comm_s: float, overlap_share: float = 0.0) -> float:
    """Scaling efficiency of synchronous data parallelism: compute / (compute + exposed communication)."""
    return compute_s / (compute_s + comm_s * (1 - overlap_share))
