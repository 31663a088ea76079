"""The procedural image set: byte-identical per seed, ImageNet-like file sizes, a manifest written last and reused."""

import json

import numpy as np
import pytest
from PIL import Image

from bench.errors import ConfigError
from bench.images.procedural import (
    MANIFEST_NAME,
    TARGET_MEAN_BYTES,
    ImageSetSpec,
    jpeg_bytes,
    sample_arrays,
    write_image_set,
)


def test_same_seed_same_bytes_other_seed_other_bytes():
    spec = ImageSetSpec(count=3, seed=11)
    assert [jpeg_bytes(spec, i) for i in range(3)] == [jpeg_bytes(spec, i) for i in range(3)]
    assert jpeg_bytes(spec, 0) != jpeg_bytes(ImageSetSpec(count=3, seed=12), 0)


def test_mean_file_size_is_imagenet_like():
    spec = ImageSetSpec(count=24, seed=2019)
    mean = np.mean([len(jpeg_bytes(spec, i)) for i in range(spec.count)])
    assert abs(mean / TARGET_MEAN_BYTES - 1) < 0.15, mean


def test_written_set_has_its_manifest_and_is_reused(tmp_path):
    spec = ImageSetSpec(count=6, seed=3, classes=2, scale=0.1)
    folder, manifest = write_image_set(spec, tmp_path)
    files = sorted(folder.rglob("*.jpg"))
    assert len(files) == manifest.count == 6
    assert {f.parent.name for f in files} == {"class_000", "class_001"}
    assert manifest.total_bytes == sum(f.stat().st_size for f in files)
    assert sum(manifest.pixel_histograms["R"]) == sum(np.prod(Image.open(f).size) for f in files)
    files[0].write_bytes(b"changed")  # a reused set is read from its manifest, not regenerated
    again = write_image_set(spec, tmp_path)[1]
    assert again.files_sha256 == manifest.files_sha256
    assert json.loads((folder / MANIFEST_NAME).read_text())["count"] == 6


def test_sample_arrays_shape_and_determinism():
    a = sample_arrays(2, 5, 16, 20)
    assert a.shape == (2, 16, 20, 3) and a.dtype == np.uint8
    assert np.array_equal(a, sample_arrays(2, 5, 16, 20))
    assert a.std() > 10  # not a constant image


@pytest.mark.parametrize("bad", [dict(count=0), dict(scale=0), dict(quality=101), dict(classes=0)])
def test_bad_spec_is_refused(bad):
    with pytest.raises(ConfigError):
        ImageSetSpec(**bad)
