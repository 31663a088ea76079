"""The smoke test a multi-stage pipeline schedule (interleaved, zero-bubble) passes before it is offered on a CPU.

gloo's batched point-to-point sends have hung upstream for interleaved schedules (PiPPy #989/#1130, pytorch #132644):
before a sweep runs such a schedule over gloo, two processes train a tiny MLP cut into 2 stages per rank (4 stages)
for one step of the schedule, under a hard timeout, and each rank compares its loss and updated weights with one
process training the whole MLP on the same batch. The result is cached per torch version (results/<host>/
pipeline_smoke.json) and written into every record of that schedule; a schedule that failed or hung is refused with
the reason (a `skipped` record), never run into a hang.

`python -m bench.adapters.torch.pipeline_smoke rank SCHEDULE RANK PORT OUT_DIR` is one rank of it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMOKE_FILE = "pipeline_smoke.json"
STEP = "in the schedule's step"
BARRIER, DESTROY, DONE = "in the barrier after the step", "in destroy_process_group", "done"
AFTER_STEP = (STEP, BARRIER, DESTROY, DONE)  # the step's timeout runs from when every rank reached one of these
MODULE = "bench.adapters.torch.pipeline_smoke"
# One step of a tiny MLP takes well under a second; a step unfinished STEP_TIMEOUT_S after both ranks began it hangs.
# The whole test (python and torch start-up, the process group) gets SMOKE_TIMEOUT_S: seconds on a quiet machine,
# about 45 s on a CPU-capped one.
STEP_TIMEOUT_S = 30.0
SMOKE_TIMEOUT_S = 240.0
STAGES_PER_RANK = 2
RANKS = 2
MICRO_BATCHES = 4
BATCH, WIDTH, CLASSES = 16, 8, 4
CHECK = (f"one step of a {RANKS * STAGES_PER_RANK}-stage MLP ({STAGES_PER_RANK} stages per rank, {MICRO_BATCHES} "
         f"micro-batches of {BATCH // MICRO_BATCHES}, gloo on the CPU) within {STEP_TIMEOUT_S:.0f} s: its loss and "
         "every stage's weights after SGD match one process training the whole MLP on the same batch (rtol 1e-5)")


def _units(torch):
    """The tiny MLP as 4 stages of units (the reference and every rank build it from the same seed)."""
    torch.manual_seed(0)
    nn = torch.nn
    return [[nn.Linear(WIDTH, 16), nn.ReLU()], [nn.Linear(16, 16), nn.ReLU()], [nn.Linear(16, 16), nn.ReLU()],
            [nn.Linear(16, CLASSES)]]


def _data(torch):
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, WIDTH, generator=g), torch.randint(0, CLASSES, (BATCH,), generator=g)


def stage_ranks(schedule: str, ranks: int, stages: int) -> dict[int, int]:
    """Which rank holds each stage: round-robin ("loop") for the interleaved schedules, a V for ZBV and DualPipeV."""
    if "ZBV" in schedule or "DualPipeV" in schedule:
        return {s: s if s < ranks else stages - 1 - s for s in range(stages)}
    return {s: s % ranks for s in range(stages)}


def rank_main(schedule: str, rank: int, port: int, out_dir: Path) -> None:
    """One rank of the smoke test: its stages' step, compared with the single-process reference."""
    import faulthandler

    # SIGUSR1 from the parent (about to kill a hung rank) writes this rank's stack into its log: where it hung
    faulthandler.register(signal.SIGUSR1, all_threads=False)
    phase = out_dir / f"phase{rank}"
    phase.write_text("importing torch")
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, schedules

    torch.set_num_threads(1)
    x, y = _data(torch)
    reference = _units(torch)
    whole = torch.nn.Sequential(*[u for stage in reference for u in stage])
    loss_fn = torch.nn.CrossEntropyLoss()
    loss = loss_fn(whole(x), y)
    loss.backward()
    with torch.no_grad():
        for p in whole.parameters():
            p -= 0.1 * p.grad
    units = _units(torch)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    phase.write_text("joining the process group")
    dist.init_process_group("gloo", rank=rank, world_size=RANKS)
    n = RANKS * STAGES_PER_RANK
    mine = [s for s, r in stage_ranks(schedule, RANKS, n).items() if r == rank]
    stages = [PipelineStage(torch.nn.Sequential(*units[s]), s, n, torch.device("cpu")) for s in mine]
    sched = getattr(schedules, schedule)(stages, n_microbatches=MICRO_BATCHES, loss_fn=loss_fn)
    losses: list = []
    phase.write_text(STEP)
    sched.step(*((x,) if 0 in mine else ()), **({"target": y, "losses": losses} if n - 1 in mine else {}))
    with torch.no_grad():
        for s in mine:
            for p in (q for u in units[s] for q in u.parameters()):
                p -= 0.1 * p.grad
    problems = []
    if losses:
        got = float(torch.stack([v.detach() for v in losses]).mean())
        if abs(got - float(loss)) > 1e-5 * abs(float(loss)) + 1e-7:
            problems.append(f"loss {got:.6g} against {float(loss):.6g} in one process")
    for s in mine:
        ours, theirs = (q for u in units[s] for q in u.parameters()), (q for u in reference[s] for q in u.parameters())
        for a, b in zip(ours, theirs):
            if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
                problems.append(f"stage {s}'s weights differ from one process's by up to "
                                f"{float((a - b).abs().max()):.3g}")
                break
    phase.write_text(BARRIER)
    dist.barrier()  # as the launcher's rank loop does after its steps
    (out_dir / f"rank{rank}.json").write_text(json.dumps({"problems": problems}))
    phase.write_text(DESTROY)
    dist.destroy_process_group()
    phase.write_text(DONE)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # each rank leads its own session: its children go with it
        p.wait()


def _where(out: Path) -> str:
    """Each rank's phase when it was killed, and the innermost torch frame of its stack dump."""
    said = []
    for r in range(RANKS):
        phase = (out / f"phase{r}").read_text() if (out / f"phase{r}").exists() else "not started"
        log = (out / f"log{r}").read_text() if (out / f"log{r}").exists() else ""
        frames = [line.strip() for line in log.splitlines() if line.strip().startswith("File ") and "torch" in line]
        said.append(f"rank {r} {phase}" + (f", at {frames[0]}" if frames else ""))
    return "; ".join(said)


def _wait(procs: list[subprocess.Popen], out: Path, t0: float, timeout_s: float,
          step_timeout_s: float) -> tuple[str | None, bool]:
    """Wait for both ranks: (a hang's reason or None, whether that says anything of the schedule). A hang: the step
    unfinished `step_timeout_s` after both ranks began it; the whole test past `timeout_s` before both began it is
    a start-up too slow (a throttled machine), which says nothing of the schedule."""
    in_step = None
    while any(p.poll() is None for p in procs):
        now = time.perf_counter()
        phases = [(out / f"phase{r}").read_text() if (out / f"phase{r}").exists() else "" for r in range(RANKS)]
        if in_step is None and all(ph in AFTER_STEP for ph in phases):
            in_step = now
        if now - t0 > timeout_s or (in_step is not None and now - in_step > step_timeout_s):
            limit = (f"the step unfinished {step_timeout_s:.0f} s after both ranks began it" if in_step is not None
                     and now - in_step > step_timeout_s else f"no result within {timeout_s:.0f} s")
            for p in procs:  # a stack dump from every rank still running, then the kill
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGUSR1)
            time.sleep(1.0)
            return f"hung: {limit} (both ranks killed; {_where(out)})", in_step is not None
        time.sleep(0.2)
    return None, True


def run(schedule: str, timeout_s: float = SMOKE_TIMEOUT_S, step_timeout_s: float = STEP_TIMEOUT_S) -> dict:
    """Run the smoke test of `schedule` now: {"passed", "reason", "conclusive", "seconds", "check", "when"}; a hang
    is killed and is a failure (not `conclusive` where the ranks never reached the step)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dlbench-smoke-") as tmp:
        out, port = Path(tmp), _free_port()
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        procs = [subprocess.Popen([sys.executable, "-m", MODULE, "rank", schedule, str(r), str(port), tmp],
                                  stdout=(out / f"log{r}").open("w"), stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True) for r in range(RANKS)]
        try:
            reason, conclusive = _wait(procs, out, t0, timeout_s, step_timeout_s)
        finally:
            _stop(procs)
        if reason is None:
            failed = [(r, p.returncode) for r, p in enumerate(procs) if p.returncode]
            if failed:
                r, code = failed[0]
                tail = (out / f"log{r}").read_text().strip().splitlines()[-1:] or [""]
                reason = f"rank {r} exited {code}: {tail[0][:300]}"
            else:
                problems = [q for r in range(RANKS)
                            for q in json.loads((out / f"rank{r}.json").read_text())["problems"]]
                reason = "; ".join(problems) or None
    return {"passed": reason is None, "reason": reason or "", "conclusive": conclusive,
            "seconds": round(time.perf_counter() - t0, 2),
            "check": CHECK, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def cached(schedule: str, torch_version: str, cache_dir: Path | str) -> dict:
    """The smoke test's result for `schedule` on this torch version: from `cache_dir`'s SMOKE_FILE (the host's
    results folder), else run now and cached (a hang too: it is not tried again for this torch version; a start-up
    too slow to reach the step is not cached)."""
    path = Path(cache_dir) / SMOKE_FILE
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    entry = cache.get(torch_version, {}).get(schedule)
    if entry is None:
        entry = {**run(schedule), "version": torch_version}
        if not entry["conclusive"]:
            return entry
        cache.setdefault(torch_version, {})[schedule] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        tmp.replace(path)  # a reader never sees half a file
    return entry


if __name__ == "__main__":
    if sys.argv[1] == "rank":
        rank_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
    else:  # python -m bench.adapters.torch.pipeline_smoke SCHEDULE...: run now, print the results
        print(json.dumps({s: run(s) for s in sys.argv[1:]}, indent=1))
