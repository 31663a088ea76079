"""Study coverage: for each source study this project remakes, each of its figures or claims -> measured here (from
the data at hand), where in the report, or why not and what would measure it; the references; and where the
communication model and a published point disagree by more than 2x."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pandas as pd

from ..adapters import ADAPTERS, measures_a_framework
from ..strategies import BATCH_METHOD, DATA_PARALLEL, PARAMETER_SERVER, names
from ..values import counted
from .hosts import cores_said, gpus_said
from .input_pipeline import CLAIM_2019, CLAIM_HKBU, NOT_TESTABLE, QUESTION_CPU, claim_summary, claim_verdicts
from .systems import HISTORICAL

# Full citations, cited by key in the coverage tables and the text.
REFERENCES = {
    "2019": "ititandev, *deep-learning-benchmark*: TensorFlow 1.13, PyTorch 1.0.1 and Caffe2 0.8.1 on a CPU "
            "(2x Xeon Silver 4114), Tesla P100 and Tesla T4; VGG16 and ResNet152, batch 4-32. Student report and "
            "data, 2019, https://github.com/ititandev/deep-learning-benchmark (results/cpu.txt, p100.txt, t4.txt).",
    "SINGA": "Apache SINGA documentation, *Benchmark: distributed training* (benchmark-train.md), ResNet-50 on "
             "Tesla K80 (AWS p2.8xlarge), 10 Gbit/s, 1-128 GPUs, https://github.com/apache/singa-doc; "
             "W. Wang et al., *SINGA: Putting Deep Learning in the Hands of Multimedia Users*, ACM Multimedia 2015.",
    "HKBU": "S. Shi, Q. Wang, X. Chu, *Performance Modeling and Evaluation of Distributed Deep Learning Frameworks "
            "on GPUs*, IEEE DataCom 2018, arXiv:1711.05979 (Hong Kong Baptist University); S. Shi, Q. Wang, P. Xu, "
            "X. Chu, *Benchmarking State-of-the-Art Deep Learning Software Tools*, arXiv:1608.07249.",
    "thesis": "The 2021 thesis demonstration this project's distributed section follows (TensorFlow ps/worker "
              "processes on localhost; asynchronous parameter servers against synchronous all-reduce); the project's "
              "sources give its year and what it showed, not its author or title. Downpour SGD: J. Dean et al., "
              "*Large Scale Distributed Deep Networks*, NIPS 2012.",
    "Goyal": "P. Goyal et al., *Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour*, arXiv:1706.02677, 2017.",
    "Horovod": "A. Sergeev, M. Del Balso, *Horovod: fast and easy distributed deep learning in TensorFlow*, "
               "arXiv:1802.05799, 2018; Horovod documentation, benchmarks.rst, https://github.com/horovod/horovod.",
    "Kalibera": "T. Kalibera, R. Jones, *Rigorous Benchmarking in Reasonable Time*, ISMM 2013.",
    "vendors": "Single-device throughput for context: TensorFlow tf_cnn_benchmarks page (2017), NVIDIA "
               "DeepLearningExamples READMEs, Lambda deeplearning-benchmark, timm benchmark CSVs, PyTorch "
               "benchmarks/distributed/ddp README (each row names its own source in the details' appendix).",
}

STUDY_TITLES = {"2019": "The 2019 study [2019]", "SINGA": "Apache SINGA's distributed benchmark [SINGA]",
                "HKBU": "HKBU's performance model of distributed SGD [HKBU]",
                "thesis": "The thesis demonstration of parameter servers [thesis]"}

# Placeholders in a claim's `why_not`, filled from the hosts in the results (bench/report/hosts.py): the text is
# never written for one machine.
CORES, GPUS = "{cores}", "{gpus}"


@dataclass(frozen=True)
class Claim:
    study: str
    claim: str
    measured: Callable  # (ReportData, the claim) -> what these results hold for it, "" when nothing
    where: str  # the report section that shows it
    why_not: str  # what stops a full remake on a machine like this one
    command: str  # what would measure it


def _configs(d, **match) -> pd.DataFrame:
    c = d.configs
    if c.empty:
        return c
    for col, values in match.items():
        c = c[c[col].isin(values)]
    return c


def measured_by(d, runs: Iterable) -> str:
    """' (profile `quick`)': the profiles whose sweeps measured the successful framework runs among `runs`, from
    their sweep manifests (a run outside any sweep: 'single runs'), so a row never credits one command with what
    another measured."""
    profile = {m.sweep_id: m.profile for m in d.sweeps}
    ok = [r for r in runs if r.status == "ok" and measures_a_framework(r.config.framework)]
    names = sorted({profile.get(r.sweep.id) or "unknown" for r in ok if r.sweep})
    said = ([f"profile{'s' if len(names) > 1 else ''} " + ", ".join(f"`{n}`" for n in names)] if names else []) + \
        (["single runs"] if any(not r.sweep for r in ok) else [])
    return f" ({'; '.join(said)})" if said else ""


def _batches(d, models, modes=("inference", "training")) -> str:
    c = _configs(d, model=models, mode=modes)
    if c.empty:
        return ""
    parts = [f"{m} {mode} batch {', '.join(str(b) for b in sorted(g['batch_size'].unique()))} "
             f"({', '.join(sorted(g['framework'].unique()))})" for (m, mode), g in c.groupby(["model", "mode"])]
    runs = (r for r in d.records if r.config.model in models and r.config.mode in modes)
    return "; ".join(parts) + measured_by(d, runs)


def _devices(d, claim: str = "") -> str:
    if d.configs.empty:
        return ""
    platforms = sorted(d.configs["platform"].unique())
    return f"{counted(len(platforms), 'device')}: " + ", ".join(platforms) + measured_by(d, d.records)


def named_in(text: str) -> tuple[str, ...]:
    """The registered frameworks a study's claim names (by name or display name)."""
    words = set(re.findall(r"[a-z0-9_]+", text.lower()))
    return tuple(n for n in ADAPTERS if ADAPTERS.get(n).measures_a_framework and
                 ({n, (ADAPTERS.get(n).display_name or n).lower().replace(" ", "")} & words))


# The strategy families the studies' claims are about (bench/strategies/)
def _parameter_server(s) -> bool:
    return s.family == PARAMETER_SERVER


def _asynchronous(s) -> bool:
    return s.family == PARAMETER_SERVER and not s.synchronous


def _no_overlap(s) -> bool:
    return s.family == DATA_PARALLEL and not s.overlaps_backward

def _strategies(d, test, frameworks=()) -> str:
    """What ran of the strategies `test` holds of (bench/strategies/), per framework and worker count."""
    strategies = names(test)
    t = d.scaling.table if d.scaling is not None else pd.DataFrame()
    if t.empty:
        return ""
    t = t[t["strategy"].isin(strategies)]
    if frameworks:
        t = t[t["framework"].isin(frameworks)]
    if t.empty:
        return ""
    runs = (r for r in d.scaling.records if r.config.strategy in strategies and
            (not frameworks or r.config.framework in frameworks))
    return "; ".join(f"{fw} {s} x{','.join(str(w) for w in sorted(g['workers'].unique()))}"
                     for (fw, s), g in t.groupby(["framework", "strategy"])) + measured_by(d, runs)


def _phases(d, claim: str = "") -> str:
    cols = [c for c in d.configs.columns if c.startswith("phase_")] if not d.configs.empty else []
    n = int(d.configs[cols].notna().any(axis=1).sum()) if cols else 0
    runs = (r for r in d.records if r.phases is not None)
    return f"phases of {counted(n, 'config')}" + measured_by(d, runs) if n else ""


def _accuracy(d, claim: str = "") -> str:
    acc = d.scaling.accuracy if d.scaling is not None else None
    if acc is None or acc.empty:
        return ""
    return f"{len(acc)} strategy rows" + measured_by(d, (r for r in d.scaling.records if r.distributed and
                                                         r.distributed.accuracy))


def _frameworks(d, names) -> str:
    c = _configs(d, framework=names)
    return (", ".join(f"{fw} ({counted(len(g), 'config')})" for fw, g in c.groupby("framework"))
            + measured_by(d, (r for r in d.records if r.config.framework in names)) if not c.empty else "")


def _historical(keys) -> Callable:
    return lambda d, claim: ""  # never installable here (bench/report/systems.py says why)


def _input_claim(study: str) -> Callable:
    """What the files-vs-synthetic runs say of a study's input claim: the configs behind each verdict (winner /
    equivalent within the margin / undecided), named by framework and model."""
    def measured(d, claim: str) -> str:
        claims = claim_verdicts(d.inputs if d.inputs is not None else pd.DataFrame(), d.judge)
        if not claims.empty:  # judged where the hardware can test it; a CPU host's rows answer another question
            claims = claims[(claims["verdict"] != NOT_TESTABLE) & ~claims["claim"].str.endswith(QUESTION_CPU)]
        return claim_summary(claims, study)
    return measured


def _why_historical(*keys) -> str:
    return "; ".join(f"{s.name}: {s.reason}" for s in HISTORICAL if s.key in keys)


CLAIMS = [
    Claim("2019", "Figures 3-8: images/s against batch size 4-32, VGG16 and ResNet152, training and inference, "
          "one chart per device", lambda d, claim: _batches(d, ("vgg16", "resnet152")),
          "Throughput vs batch size; Then and now",
          f"the default profile runs ResNet-50 (VGG16 and ResNet152 over batch 1-32 in every framework take hours on "
          f"{CORES}); GPUs here: {GPUS} (the study's were a P100 and a T4)",
          "`make report PROFILE=seed` (the 2019 protocol; hours on a CPU)"),
    Claim("2019", "Figures 9-11: each framework on each device at batch 32 and at its best batch", _devices,
          "Each framework at batch 32 and its best batch",
          "one device per machine: a comparison across hardware needs results from several machines",
          "`make sweep PROFILE=seed` on each machine, results/<host>/ folders copied into one results folder, "
          "then `make render`"),
    Claim("2019", "Caffe2 beside TensorFlow and PyTorch", _historical(("caffe2",)), "Frameworks: measured and not",
          _why_historical("caffe2"), "none (ONNX Runtime is measured as its deployment successor)"),
    Claim("2019", CLAIM_2019, _input_claim("2019"), "Does the input pipeline bound training here?",
          f"GPUs here: {GPUS}; the study's claim is about one GPU; on a CPU host files and synthetic data are "
          "compared on the CPU",
          "`make report PROFILE=input` (PyTorch, TensorFlow, JAX and "
          "MXNet training, ONNX Runtime and OpenVINO inference; ResNet-18 beside ResNet-50); PROFILE=input-full "
          "(AlexNet too, every model at 224x224)"),
    Claim("SINGA", "ResNet-50 throughput and communication cost against 1-128 GPUs, all-reduce against a "
          "parameter server", lambda d, claim: _strategies(d, _parameter_server) and _strategies(
              d, lambda s: s.communicates),  # measured only with a parameter server beside all-reduce
          "Distributed: throughput and communication cost; extrapolation to published set-ups",
          f"CPU workers share the cores ({CORES}), ResNet-18 at 32x32; GPUs here: {GPUS}; published points are drawn "
          "beside the alpha-beta model instead; the claim needs a parameter server beside all-reduce", "`make report "
          "PROFILE=distributed` (more strategies, an emulated 1 Gbit/s link); GPUs: the multi-GPU commands in "
          "docs/distributed.md"),
    Claim("SINGA", "SINGA itself", _historical(("singa",)), "Frameworks: measured and not",
          _why_historical("singa"), "none (PyTorch DDP and the ps_sync / ps_async strategies stand in)"),
    Claim("HKBU", "An SGD step split into I/O, host-to-device, forward, backward, update and communication",
          _phases, "details: phase breakdown; Distributed: step breakdown (details)",
          f"a CPU run has no host-to-device copy to time (its data is resident); GPUs here: {GPUS}",
          "a GPU machine: `make report` there (phases are timed on every run)"),
    Claim("HKBU", "Overlapping communication with backward is what makes frameworks scale",
          lambda d, claim: _strategies(d, _no_overlap) and _strategies(d, lambda s: s.family == DATA_PARALLEL),
          "Distributed: step breakdown and overlap (details); extrapolation",
          "the claim needs all-reduce with and without overlap (allreduce_nosync: after backward); where only "
          "all-reduce ran, its overlap share is in the scaling table but nothing to set it against; and 2 workers "
          "on loopback show its effect at that scale only (larger scales are modelled)",
          "`make report PROFILE=distributed` (bucket sizes 1 / 25 / 100 MB, all-reduce after backward)"),
    Claim("HKBU", CLAIM_HKBU, _input_claim("HKBU"), "Does the input pipeline bound training here?",
          f"GPUs here: {GPUS}; a fast device is what the claim needs; on a CPU host decoding shares the CPU's cores "
          "with compute",
          "`make report PROFILE=input`; on a GPU machine, the same profile there"),
    Claim("HKBU", "Caffe-MPI, CNTK, MXNet and TensorFlow compared on a GPU cluster",
          lambda d, claim: _frameworks(d, named_in(claim)),
          "Answer; Frameworks: measured and not",
          _why_historical("cntk", "caffe-mpi") + f"; GPUs here: {GPUS}; MXNet and TensorFlow run single-process "
          "here",
          "none for CNTK and Caffe-MPI"),
    Claim("thesis", "TensorFlow ps/worker processes on localhost",
          lambda d, claim: _strategies(d, _asynchronous, named_in(claim)),
          "Distributed: throughput and communication cost", "", "`make report PROFILE=distributed`"),
    Claim("thesis", "Asynchronous parameter servers against synchronous all-reduce: accuracy over time (Downpour "
          "SGD)", _accuracy, "Distributed: accuracy over time (details)", "",
          "`make report PROFILE=distributed` (digits MLP, 2 workers)"),
    Claim("thesis", "Model parallelism: the network's layers split across workers",
          lambda d, claim: _strategies(d, lambda s: s.pipeline and not s.micro_batched), "Parallelism strategies", "",
          "`make sweep PROFILE=parallelism` (the naive split of ResNet-18 over 2 processes)"),
    Claim("thesis", "Layer pipelining: the split model fed micro-batches so the stages work at once",
          lambda d, claim: _strategies(d, lambda s: s.micro_batch_sweep), "Parallelism strategies", "",
          "`make sweep PROFILE=parallelism` (GPipe and 1F1B, model parallel as m = 1, m = 2, 4 and 8, a "
          "time-balanced cut)"),
    Claim("thesis", "Downpour SGD (DistBelief): asynchronous SGD through a parameter server",
          lambda d, claim: _strategies(d, _asynchronous), "Distributed: accuracy over time (details)", "",
          "`make report PROFILE=distributed` (TensorFlow's asynchronous parameter server, digits MLP)"),
    Claim("thesis", "Sandblaster L-BFGS (DistBelief): a coordinator drives L-BFGS over workers' gradient work units",
          lambda d, claim: _strategies(d, lambda s: s.family == BATCH_METHOD),
          "Distributed: accuracy over time (details)",
          "PyTorch only (its torch.optim.LBFGS), beside TensorFlow's Downpour and all-reduce on the same digits task "
          "and process count; one parameter server here (the code shards over several)",
          "`make sweep PROFILE=parallelism` (digits MLP: a coordinator, a parameter server and 2 workers)"),
]


def _filled(text: str, here: dict[str, str]) -> str:
    for placeholder, value in here.items():
        text = text.replace(placeholder, value)
    return text


def coverage_table(d, study: str) -> pd.DataFrame:
    """One study's figures and claims: measured here (what the results hold), where, or why not and how."""
    rows = []
    here = {CORES: cores_said(d.records), GPUS: gpus_said(d.records)}
    for c in CLAIMS:
        if c.study != study:
            continue
        held = c.measured(d, c.claim) if not d.configs.empty or d.scaling is not None else ""
        rows.append({"figure or claim": c.claim, "measured here": held or "not measured",
                     "where in the report": c.where if held else "",
                     "why not (fully) measured": _filled(c.why_not, here) or ("" if held else "not in these results"),
                     "what would measure it": c.command})
    return pd.DataFrame(rows)


def references() -> str:
    return "\n".join(f"- [{key}] {text}" for key, text in REFERENCES.items())


# Why a model curve and a published point can disagree, per model curve (the model is bench/runs/distributed's
# alpha-beta model with this machine's latency and overlap).
_LIKELY = {
    "parameter server (1 server)": "the model has one server that every worker waits on, with no overlap; the "
                                   "published system shards its parameters over several servers and overlaps "
                                   "their traffic with computation",
    "ring all-reduce": "the model assumes this machine's link latency and overlap share, not the published "
                       "cluster's, and no contention or stragglers",
}


def disagreements(model_rows: pd.DataFrame, published: pd.DataFrame, factor: float = 2.0) -> list[str]:
    """Published efficiency points the alpha-beta model misses by more than `factor` at the same worker count,
    each with the likely reason (one line per model curve and published system)."""
    if model_rows.empty or published.empty:
        return []
    out = []
    for setup, g in model_rows.groupby("setup", sort=False):
        systems = g["system"].iloc[0]
        points = published[published["system"].isin(systems)]
        pairs = [(c, sy) for c in g["model"].unique() for sy in points["system"].unique()]
        for curve, system in pairs:
            if ("parameter" in curve) != ("parameter" in system.lower()):
                continue  # compare like with like: the server model with the server system
            m = g[g["model"] == curve].set_index("workers")["efficiency"]
            p = points[(points["system"] == system) & points["workers"].isin(m.index) & (points["workers"] > 1)]
            if p.empty:
                continue
            ratio = p["efficiency"].to_numpy() / m.loc[p["workers"]].to_numpy()
            off = (ratio > factor) | (ratio < 1 / factor)
            if not off.any():
                continue
            worst = int(abs(pd.Series(ratio).map(lambda r: max(r, 1 / r))).idxmax())
            w, r = int(p["workers"].iloc[worst]), float(ratio[worst])
            reason = next((v for k, v in _LIKELY.items() if curve.startswith(k)), "")
            out.append(f"{setup}: the model's *{curve}* curve and {system}'s published points disagree by more "
                       f"than {factor:g}x at {int(off.sum())} of {len(p)} worker counts (worst: {w} workers, "
                       f"published {r:.1f}x the model). Likely reason: {reason}.")
    return out
