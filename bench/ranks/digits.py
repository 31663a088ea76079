"""scikit-learn's handwritten digits (1797 8x8 images, shipped inside the package): a small real
dataset on which the price of asynchronous updates (stale gradients) shows as accuracy over time."""

from __future__ import annotations

import numpy as np

TEST_SHARE = 0.25


def load(channels_last: bool, seed: int = 0) -> dict:
    """{"train": (x, y), "test": (x, y)}: pixels scaled to [0, 1], grey replicated to 3 channels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)
    x = np.repeat(x[:, None], 3, axis=1)  # N, 3, 8, 8
    if channels_last:
        x = x.transpose(0, 2, 3, 1).copy()
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * TEST_SHARE)
    test, train = order[:n_test], order[n_test:]
    return {"train": (x[train], y[train]), "test": (x[test], y[test])}


def batches(x, y, batch: int, worker: int, workers: int, seed: int):
    """Endless shuffled batches from this worker's shard of the training set."""
    shard = np.arange(worker, len(y), workers)
    rng = np.random.default_rng(seed + worker)
    while True:
        order = rng.permutation(shard)
        for i in range(0, len(order) - batch + 1, batch):
            idx = order[i:i + batch]
            yield x[idx], y[idx]
