"""MXNet's own input pipeline for data mode `files`, as its users write it: a gluon.data Dataset that decodes each
JPEG with mx.image.imread, augments it with gluon.data.vision.transforms (RandomResizedCrop, RandomFlipLeftRight,
ToTensor, Normalize), and a gluon.data.DataLoader with workers. Its thread-pool workers (thread_pool=True, one of
its documented modes): forked worker processes inherit this process's MXNet engine and signal handlers, and the pool
ends them with SIGTERM at exit; MXNet's operators release the GIL, so threads decode in parallel. Caveat: the step's
clock waits with mx.nd.waitall, which also waits for the loader's operators in flight on the same engine, so MXNet's
data wait shows up inside its step's sync rather than as the wait for the next batch."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import mxnet as mx
from mxnet.gluon.data import DataLoader, Dataset, Sampler
from mxnet.gluon.data.vision import transforms

from ...images.files import CROP_RATIO, CROP_SCALE, MEAN, STD, FileSet
from ..input_feed import FilesFeed, open_file_set

PIPELINE = ("mxnet.gluon.data.DataLoader (thread-pool workers) + mx.image.imread + gluon.data.vision.transforms "
            "RandomResizedCrop, RandomFlipLeftRight, ToTensor, Normalize")


class JpegFiles(Dataset):
    """Item i: file i decoded to RGB, cropped, flipped and normalised (NCHW float32); its label and index."""

    def __init__(self, files: FileSet, image_size: int) -> None:
        self.paths, self.labels = files.absolute(), files.labels
        # applied one by one, not through transforms.Compose: Compose hybridizes ToTensor+Normalize, and the first
        # call from several loader threads at once builds that graph concurrently in one Block's name scope (a race
        # that ends in "'NoneType' object has no attribute '__exit__'"); the blocks run imperatively, thread-safe
        self.steps = (
            transforms.RandomResizedCrop(image_size, scale=CROP_SCALE, ratio=CROP_RATIO),
            transforms.RandomFlipLeftRight(),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        )

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        image = mx.image.imread(self.paths[i])
        for step in self.steps:
            image = step(image)
        return image, self.labels[i], i


class Endless(Sampler):
    """The stream order every framework reads (file k mod n, no shuffle), endless."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        return itertools.cycle(range(self.n))

    def __len__(self) -> int:
        return self.n


def batches(files: FileSet, batch_size: int, image_size: int, workers: int) -> Iterator:
    loader = DataLoader(JpegFiles(files, image_size), batch_size=batch_size, sampler=Endless(len(files.paths)),
                        last_batch="discard", num_workers=workers, thread_pool=True)
    return iter(loader)


def mxnet_feed(config) -> FilesFeed:
    files = open_file_set(config.data_dir, config.data_images, config.batch_size)
    return FilesFeed(files, lambda w: batches(files, config.batch_size, config.image_size, w),
                     lambda i: [int(v) for v in i.asnumpy()], PIPELINE, config.batch_size, config.image_size, "NCHW")
