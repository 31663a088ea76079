"""The image files a `files` run reads (a user's ImageFolder tree or the procedural set), screened and checksummed.

Framework-free: every framework's input pipeline (bench/adapters/<fw>/input_files.py) reads the same `FileSet`, in
the same order (index k of the stream is file k mod n: sequential, cycled, no shuffle), to the same output size with
the same normalisation constants; the random crops and flips are each framework's own, as its users would have them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..masking import brief

JPEG_SUFFIXES = (".jpg", ".jpeg", ".JPG", ".JPEG")
# torchvision's and Keras' ImageNet constants (RGB, on pixels scaled to [0, 1]); every pipeline normalises with them
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# RandomResizedCrop's defaults in torchvision, and the area/aspect ranges of TF's ImageNet preprocessing
CROP_SCALE = (0.08, 1.0)
CROP_RATIO = (3 / 4, 4 / 3)
CORE_RULE = ("the step keeps its `threads` compute threads; the loader gets max(1, min(8, cores // 4)) workers or "
             "parallel calls beside them (the same rule for every framework), so on a small CPU they share the cores")


@dataclass
class FileSet:
    """Files in reading order (class folders sorted, then names) with their labels, and the files refused."""

    root: str
    paths: list[str]  # relative to root
    labels: list[int]
    classes: int
    skipped: list[dict] = field(default_factory=list)  # {"path", "reason"}: reported by name, never read
    source: str = "data_dir"  # or "procedural"
    manifest: dict = field(default_factory=dict)

    def absolute(self) -> list[str]:
        return [os.path.join(self.root, p) for p in self.paths]

    @property
    def list_sha256(self) -> str:
        return paths_sha256(self.paths)

    def describe(self) -> dict:
        """What the record keeps of the set (the procedural set's manifest, or the user's folder's facts)."""
        return {"source": self.source, "root": self.root, "files": len(self.paths), "classes": self.classes,
                "list_sha256": self.list_sha256, "skipped": list(self.skipped), "skipped_count": len(self.skipped),
                "manifest": dict(self.manifest)}


def paths_sha256(paths: list[str]) -> str:
    """The checksum of a file list in its order (relative paths, NUL-separated)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.encode() + b"\0")
    return digest.hexdigest()


def stream_order(files: int, images: int) -> list[int]:
    """The file indices a pipeline reads for `images` images: sequential, cycled over the set."""
    return [k % files for k in range(images)]


# The most pixels one image may claim: Pillow's decompression-bomb threshold (about 89.5 megapixels, a 9459 x 9459
# image). A header claiming 65500 x 65500 would make each loader worker allocate 12.9 GB before decoding a byte.
MAX_PIXELS = 89_478_485
HEADER_BYTES = 1 << 18  # the headers before the image data (EXIF, ICC profiles, thumbnails) fit in this many
# Frame headers (SOF0-15): every marker from 0xC0 to 0xCF but DHT (C4), JPG (C8) and DAC (CC)
_SOF = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_NO_LENGTH = {0x01, *range(0xD0, 0xD8)}  # TEM and the restart markers stand alone


def jpeg_problem(path: Path) -> str | None:
    """Why `path` is not a readable JPEG (None: it looks like one): a cheap screen of its start and end markers and
    its headers, so a truncated, foreign, empty or oversized file is refused by name before any pipeline would crash
    on it or allocate for it."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(HEADER_BYTES)
            f.seek(max(0, size - 1024))
            tail = f.read()
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if head[:3] != b"\xff\xd8\xff":
        return "not a JPEG (no start-of-image marker)"
    if b"\xff\xd9" not in tail:
        return "truncated JPEG (no end-of-image marker)"
    return header_problem(head, size)


def header_problem(head: bytes, size: int) -> str | None:
    """Walk the segments from the start-of-image marker to the start of scan: a frame header giving the image's size
    (refused over MAX_PIXELS) and image data after the scan header are required. Headers longer than `head` are
    not judged (None)."""
    at, frame = 2, None
    while at + 2 <= len(head):
        if head[at] != 0xFF:
            return f"corrupt JPEG (no marker at byte {at} of its headers)"
        marker = head[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in _NO_LENGTH:
            at += 2
            continue
        if marker == 0xD9:
            return "no image data (the file ends before any scan)"
        if at + 4 > len(head):
            return None
        length = int.from_bytes(head[at + 2:at + 4], "big")
        if marker in _SOF and at + 9 <= len(head):
            height, width = int.from_bytes(head[at + 5:at + 7], "big"), int.from_bytes(head[at + 7:at + 9], "big")
            frame = (width, height)
            if width * height > MAX_PIXELS:
                return (f"its header claims {width} x {height} px ({width * height / 1e6:.0f} megapixels), over the "
                        f"decoder limit of {MAX_PIXELS / 1e6:.1f} megapixels")
            if not width or not height:
                return f"corrupt JPEG (its header claims {width} x {height} px)"
        if marker == 0xDA:
            if frame is None:
                return "corrupt JPEG (a scan before any frame header)"
            return "no image data (nothing between the scan header and the end)" if at + 2 + length >= size - 2 \
                else None
        at += 2 + length
    return None


def scan(root: Path | str) -> FileSet:
    """Every file under `root`'s class folders (ImageFolder layout; files directly in `root` form one class),
    JPEGs kept and everything else reported by name."""
    root = Path(root)
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    groups = list(enumerate(folders))
    # the procedural set's manifest sits beside its class folders; anything else loose is read as one more class
    loose = sorted(p for p in root.iterdir() if p.is_file() and p.name != "manifest.json") if root.is_dir() else []
    paths, labels, skipped = [], [], []

    def take(label: int, file: Path) -> None:
        rel = str(file.relative_to(root))
        problem = (jpeg_problem(file) if file.suffix in JPEG_SUFFIXES
                   else f"not a JPEG file name ({file.suffix or 'no suffix'})")
        if problem:
            skipped.append({"path": rel, "reason": problem})
        else:
            paths.append(rel)
            labels.append(label)

    for label, folder in groups:
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            take(label, file)
    for file in loose:
        take(len(groups), file)
    return FileSet(root=str(root), paths=paths, labels=labels, classes=max(1, len(groups) + bool(loose)),
                   skipped=skipped)


def check_data_dir(path: str, batch_size: int) -> FileSet:
    """The user's data folder, refused before any work (ConfigError: exit 2, the path named) when it is missing, holds
    no JPEG, or fewer JPEGs than one batch."""
    root = Path(path).expanduser()
    try:
        found = root.is_dir()
    except OSError as exc:  # a name the file system refuses (too long, ...): refused as any bad folder is
        raise ConfigError(f"data_dir {brief(path)!r}: {exc.strerror}; valid: an existing folder's path") from None
    if not found:
        raise ConfigError(f"data_dir {path!r}: no such folder")
    files = scan(root)
    if not files.paths:
        seen = f" ({len(files.skipped)} other files, none a readable JPEG)" if files.skipped else ""
        raise ConfigError(f"data_dir {path!r} holds no JPEG images{seen}")
    if len(files.paths) < batch_size:
        raise ConfigError(f"data_dir {path!r} holds {len(files.paths)} readable JPEGs, fewer than one batch of "
                          f"{batch_size}; valid: batch_size <= {len(files.paths)}")
    return files


def loader_workers(cores: int) -> int:
    """Loader workers (or tf.data parallel calls) beside the compute threads: see CORE_RULE."""
    return max(1, min(8, cores // 4))
