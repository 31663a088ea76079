"""PyTorch's own input pipeline for data mode `files`, as its users write it: a Dataset that reads and decodes each
JPEG with torchvision.io.decode_jpeg and augments it with transforms v2 (RandomResizedCrop, flip, normalise), a
DataLoader with worker processes (pinned memory and non-blocking copies on a GPU). ONNX Runtime and OpenVINO users
commonly decode with torchvision too: their feed is this one's batches as NumPy arrays."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, Dataset
from torchvision.io import ImageReadMode, decode_jpeg, read_file
from torchvision.transforms import v2

from ...images.files import CROP_RATIO, CROP_SCALE, MEAN, STD, FileSet
from ..input_feed import FilesFeed, open_file_set

# torchvision 0.29 marks its decoders deprecated in favour of TorchCodec (not in this environment); decode_jpeg is
# still what its documentation and users' pipelines call, so the warning (one per image) is not repeated
warnings.filterwarnings("ignore", message="The image decoding and encoding capabilities of TorchVision",
                        category=DeprecationWarning)

PIPELINE = ("torch.utils.data.DataLoader (in-order, workers) + torchvision.io.decode_jpeg + transforms.v2 "
            "RandomResizedCrop, RandomHorizontalFlip, ToDtype, Normalize")


class JpegFolder(Dataset):
    """Item i: file i decoded to RGB, cropped, flipped and normalised; its label and index (the read log's)."""

    def __init__(self, files: FileSet, image_size: int) -> None:
        self.paths, self.labels = files.absolute(), files.labels
        self.transform = v2.Compose([
            v2.RandomResizedCrop(image_size, scale=CROP_SCALE, ratio=CROP_RATIO, antialias=True),
            v2.RandomHorizontalFlip(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(MEAN, STD),
        ])

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        image = decode_jpeg(read_file(self.paths[i]), mode=ImageReadMode.RGB)
        return self.transform(image), self.labels[i], i


class _Endless:
    """The stream order every framework reads (file k mod n, no shuffle), as an endless sampler."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        return itertools.cycle(range(self.n))


def batches(files: FileSet, batch_size: int, image_size: int, workers: int, pin: bool) -> Iterator:
    loader = DataLoader(JpegFolder(files, image_size), batch_size=batch_size, sampler=_Endless(len(files.paths)),
                        num_workers=workers, pin_memory=pin, drop_last=True, persistent_workers=workers > 0,
                        prefetch_factor=2 if workers else None)
    return iter(loader)


def torch_feed(data_dir: str, images: int, batch_size: int, image_size: int, pin: bool, layout: str) -> FilesFeed:
    files = open_file_set(data_dir, images, batch_size)
    return FilesFeed(files, lambda w: batches(files, batch_size, image_size, w, pin), lambda i: i.tolist(),
                     PIPELINE + (" (pin_memory, non_blocking copies)" if pin else ""), batch_size, image_size, layout)


def decode_pool_feed(config) -> FilesFeed:
    """ONNX Runtime's and OpenVINO's feed: this DataLoader's workers as the decode pool, its batches as NumPy arrays
    in host memory (the runtimes take NumPy), as their users commonly preprocess with torchvision."""
    files = open_file_set(config.data_dir, config.data_images, config.batch_size)

    def make(workers: int) -> Iterator:
        stream = batches(files, config.batch_size, config.image_size, workers, pin=False)
        return ((x.numpy(), y.numpy(), i) for x, y, i in stream)

    return FilesFeed(files, make, lambda i: i.tolist(), PIPELINE + " (the decode pool), as NumPy batches",
                     config.batch_size, config.image_size, "NCHW")
