"""One rank of the communication micro-benchmark (started by torchrun, gloo): all-reduce and
point-to-point (rank 0 <-> rank 1 ping-pong) times over message sizes, for the alpha-beta fit."""

from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta

from ...ranks import rankio


def main() -> None:
    spec = rankio.read_spec()
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=spec["timeout_s"]))
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {"allreduce": [], "p2p": []}
    warm = torch.ones(1 << 18)
    for _ in range(5):  # connections and buffers set up before the first timed size
        dist.all_reduce(warm)
    for nbytes, repeats in zip(spec["sizes"], spec["repeats"], strict=True):
        x = torch.ones(max(1, nbytes // 4))
        for kind in ("allreduce", "p2p"):
            times = []
            for i in range(spec["warmup"] + repeats):
                dist.barrier()
                t0 = time.perf_counter()
                if kind == "allreduce":
                    dist.all_reduce(x)
                elif rank == 0:  # ping-pong: one way = half the round trip
                    dist.send(x, 1)
                    dist.recv(x, 1)
                elif rank == 1:
                    dist.recv(x, 0)
                    dist.send(x, 0)
                dt = time.perf_counter() - t0
                if i >= spec["warmup"]:
                    times.append(dt / 2 if kind == "p2p" else dt)
            out[kind].append({"bytes": x.numel() * 4, "median_s": statistics.median(times), "samples_s": times})
    if rank == 0:
        rankio.write_result(spec, "rank0", {"rank": 0, "role": "worker", "world": world, **out,
                                            "node": int(os.environ.get("GROUP_RANK", 0))})
    dist.barrier()
    dist.destroy_process_group()
    rankio.exit_now()


if __name__ == "__main__":
    main()
