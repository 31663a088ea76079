"""Harness fidelity: the harness's median images/s vs a minimal hand-written loop with the same settings.

Each arm runs in its own fresh process (thread pools can be set only once per process), and the
arms alternate for several rounds so that drift of the machine hits both alike.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from .adapters.base import LEARNING_RATE, MOMENTUM
from .config import RunConfig
from .models import get_model

BASELINE_WARMUP, BASELINE_ITERATIONS = 5, 20


def _torch_loop(c: RunConfig) -> list[float]:
    import torch

    from .models.torch_defs import build_torch_model

    torch.set_num_threads(c.threads)
    model = build_torch_model(c.model).to(memory_format=torch.channels_last).train(c.mode == "training")
    x = torch.randn(c.batch_size, 3, c.image_size, c.image_size).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, get_model(c.model).num_classes, (c.batch_size,))
    opt = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        if c.mode == "inference":
            with torch.inference_mode():
                model(x)
        else:
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()

    return _loop(step)


def _tf_loop(c: RunConfig) -> list[float]:
    import os

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf

    from .models.keras_defs import build_keras_model

    tf.config.threading.set_intra_op_parallelism_threads(c.threads)
    tf.config.threading.set_inter_op_parallelism_threads(c.threads)
    model = build_keras_model(c.model, c.image_size)
    x = tf.random.normal((c.batch_size, c.image_size, c.image_size, 3))
    y = tf.random.uniform((c.batch_size,), 0, get_model(c.model).num_classes, dtype=tf.int32)
    opt = keras.optimizers.SGD(learning_rate=LEARNING_RATE, momentum=MOMENTUM)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def infer(x):
        return model(x, training=False)

    @tf.function
    def train(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    return _loop(lambda: (infer(x) if c.mode == "inference" else train(x, y)).numpy())


def _loop(step) -> list[float]:
    for _ in range(BASELINE_WARMUP):
        step()
    times = []
    for _ in range(BASELINE_ITERATIONS):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def baseline(config: RunConfig) -> float:
    """Median images/s of the hand-written loop (run in this process)."""
    times = (_torch_loop if config.framework == "torch" else _tf_loop)(config)
    return config.batch_size / statistics.median(times)


def _bench(args: list[str]) -> str:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          check=True).stdout


def compare(config: RunConfig, rounds: int, results_dir: str) -> dict:
    """Alternate baseline and harness processes for `rounds` rounds; ratio of the medians of each arm."""
    flags = ["--framework", config.framework, "--model", config.model, "--mode", config.mode,
             "--batch-size", str(config.batch_size), "--threads", str(config.threads)]
    base, harness = [], []
    for _ in range(rounds):
        base.append(json.loads(_bench(["fidelity", "--baseline-only", *flags]))["images_per_sec"])
        path = _bench(["run", *flags, "--results-dir", results_dir]).strip().splitlines()[-1]
        with open(path.removeprefix("record: ")) as f:
            harness.append(json.load(f)["summary"]["images_per_sec_median"])
    return {"config": config.label, "baseline_img_s": base, "harness_img_s": harness,
            "ratio": statistics.median(harness) / statistics.median(base)}
