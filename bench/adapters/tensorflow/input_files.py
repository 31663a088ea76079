"""TensorFlow's own input pipeline for data mode `files`, as its users write it: tf.data over the file paths,
tf.io.read_file + tf.io.decode_jpeg, a random crop of the same area and aspect ranges as RandomResizedCrop
(tf.image.sample_distorted_bounding_box, as TF's ImageNet preprocessing), resize, flip and normalise inside
map(num_parallel_calls=AUTOTUNE), batch and prefetch. The JAX adapter is fed by the same pipeline (see jax/adapter.py).

Parallelism follows the one core rule (bench/images/files.py): the pipeline's private thread pool has the loader's
worker count, so AUTOTUNE tunes within the same share of the cores that PyTorch's DataLoader workers get; 0 workers is
map without parallel calls and no prefetch (the step's own thread decodes)."""

from __future__ import annotations

from collections.abc import Iterator

from ...images.files import CROP_RATIO, CROP_SCALE, MEAN, STD, FileSet
from ..input_feed import FilesFeed, open_file_set

PIPELINE = ("tf.data: from_tensor_slices(paths) .repeat() .map(read_file + decode_jpeg + sample_distorted_bounding_box "
            "crop + resize + random_flip_left_right + normalise, num_parallel_calls=AUTOTUNE) .batch "
            ".prefetch(AUTOTUNE)")


def dataset(tf, files: FileSet, batch_size: int, image_size: int, workers: int):
    mean, std = tf.constant(MEAN, tf.float32), tf.constant(STD, tf.float32)

    def load(path, label, index):
        image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            tf.shape(image), bounding_boxes=tf.zeros([1, 0, 4]), min_object_covered=0.0,
            aspect_ratio_range=CROP_RATIO, area_range=CROP_SCALE, max_attempts=10,
            use_image_if_no_bounding_boxes=True)
        image = tf.slice(image, begin, size)
        image = tf.image.resize(image, (image_size, image_size), antialias=True) / 255.0
        image = tf.image.random_flip_left_right(image)
        return (image - mean) / std, label, index

    ds = tf.data.Dataset.from_tensor_slices((files.absolute(), files.labels, list(range(len(files.paths)))))
    ds = ds.repeat().map(load, num_parallel_calls=tf.data.AUTOTUNE if workers else None, deterministic=True)
    ds = ds.batch(batch_size, drop_remainder=True)
    if workers:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = max(1, workers)
    return ds.with_options(options)


def tf_batches(tf, files: FileSet, batch_size: int, image_size: int, workers: int) -> Iterator:
    with tf.device("/CPU:0"):  # the pipeline runs on the host, as tf.data does
        return iter(dataset(tf, files, batch_size, image_size, workers))


def tf_feed(tf, data_dir: str, images: int, batch_size: int, image_size: int, what: str = "") -> FilesFeed:
    """`what`: how the batch reaches the model after the pipeline (JAX: its device_put)."""
    files = open_file_set(data_dir, images, batch_size)
    return FilesFeed(files, lambda w: tf_batches(tf, files, batch_size, image_size, w),
                     lambda i: i.numpy().tolist(), PIPELINE + what, batch_size, image_size, "NHWC")
