"""A `files` run's feed: batches from a framework's own input pipeline, with the time each step waited for its batch,
the files it read (count and checksum, for the certificate) and the loader's ceiling measured alone."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

from ..host.devices import usable_cpus
from ..images.files import CORE_RULE, MEAN, STD, FileSet, check_data_dir, loader_workers, paths_sha256, scan
from ..images.procedural import ImageSetSpec, write_image_set

CEILING_WORKERS = (0, 1, 2)
CEILING_IMAGES = 96  # images timed per worker count (after one warm batch): a few batches, about a second per core


def open_file_set(data_dir: str, images: int, batch_size: int) -> FileSet:
    """The files a run reads: `data_dir` (screened again: the files skipped are the record's), or the procedural set
    of `images` images (made once into the cache outside the clone, reused after)."""
    if data_dir:
        return check_data_dir(data_dir, batch_size)
    folder, manifest = write_image_set(ImageSetSpec(count=max(images, batch_size)))
    files = scan(folder)
    files.source, files.manifest = "procedural", asdict(manifest)
    return files


class FilesFeed:
    """Batches (x, y) from `make(workers)`, an endless iterator of (images, labels, file indices) in stream order.

    `indices` turns a batch's file indices into ints (a framework tensor's own conversion). Every `next` is timed: the
    step's data wait. What was read is logged by file index, so the record says how many images and which."""

    def __init__(self, files: FileSet, make: Callable[[int], Iterator], indices: Callable[[Any], list[int]],
                 pipeline: str, batch_size: int, image_size: int, layout: str) -> None:
        self.files, self.make, self.indices = files, make, indices
        self.pipeline, self.batch_size, self.image_size, self.layout = pipeline, batch_size, image_size, layout
        self.cores = usable_cpus()
        self.workers = loader_workers(self.cores)
        self.batches = make(self.workers)
        self.waits: list[float] = []
        self.read: list[int] = []
        self.batch_shape: list[int] | None = None

    def next(self):
        t0 = time.perf_counter()
        x, y, index = next(self.batches)
        self.waits.append(time.perf_counter() - t0)
        self.read.extend(self.indices(index))
        if self.batch_shape is None:
            self.batch_shape = [int(d) for d in x.shape]
        return x, y

    def ceiling(self, workers: tuple[int, ...] = CEILING_WORKERS) -> list[dict]:
        """The loader alone (no model), per worker count: images/s and images/s per core (0 workers: the main process
        decodes, one core)."""
        out = []
        batches = max(2, -(-CEILING_IMAGES // self.batch_size))
        for w in workers:
            stream = self.make(w)
            next(stream)  # worker start-up and the first batch are not the loader's rate
            t0 = time.perf_counter()
            for _ in range(batches):
                next(stream)
            seconds = time.perf_counter() - t0
            rate = batches * self.batch_size / seconds
            out.append({"workers": w, "images_per_sec": rate, "images_per_sec_per_core": rate / max(1, w),
                        "batches": batches, "seconds": seconds})
            del stream
        return out

    def report(self, steps_s: list[float], ceiling: list[dict] | None) -> dict:
        """The record's `input` section: the set, what was read, and the last len(steps_s) steps' data waits (each
        clipped to its step: a GPU step timed by device events can start a hair after the host's clock read)."""
        waits = self.waits[-len(steps_s):] if steps_s else []
        waits = [min(max(0.0, w), s) for w, s in zip(waits, steps_s)]
        read = [self.files.paths[i] for i in self.read]
        return {
            "pipeline": self.pipeline, **self.files.describe(),
            "images_read": len(read), "read_sha256": paths_sha256(read),
            "batch_shape": self.batch_shape, "layout": self.layout, "image_size": self.image_size,
            "normalise_mean": list(MEAN), "normalise_std": list(STD),
            "loader_workers": self.workers, "cores": self.cores, "cpu_count": os.cpu_count(), "core_rule": CORE_RULE,
            "data_wait_s": waits, "data_wait_share": (sum(waits) / sum(steps_s[-len(waits):])) if waits else None,
            "ceiling": ceiling or [],
        }
