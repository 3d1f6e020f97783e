"""Profiles with a suite for qualify's tests, and the step command lines it refuses."""

from __future__ import annotations

import json
from pathlib import Path

CRITERION = {"name": "c", "benchmark": "stream", "metric": "bandwidth", "op": ">=", "value": 1}


def _profile(tmp_path, suite, criteria=None) -> Path:
    p = tmp_path / "p.yaml"
    p.write_text(json.dumps({"name": "t", "suite": suite, "criteria": criteria or [CRITERION]}))
    return p


# (a command line every node refuses, the words of its error)
REFUSED = [
    (["stream", "--float", "--dtype", "float"], "--float and --dtype cannot be used together: give one"),
    (["stream", "-s", "1K", "--sizes", "1K:4K"], "--arraysize and --sizes cannot be used together: give one"),
    (["stream", "--devices", "0,,1"], "invalid --devices '0,,1'"),
    (["stream", "--devices", "-1"], "invalid --devices '-1'"),
    (["stream", "--devices", "0-"], "invalid --devices '0-'"),
    (["stream", "--devices", "0,0"], "device 0 is listed twice"),
    (["stream", "--devices", "²"], "invalid --devices '²'"),
    (["stream", "--device", "cpu", "--devices", "1"], "--devices 1: out of range, this host has 1 CPU device"),
    (["gemm", "--devices", "a"], "invalid --devices 'a'"),
    (["gemm", "--devices", "1,1"], "device 1 is listed twice"),
    (["gemm", "--devices", "9" * 5000], "is larger than any host's device count"),
    (["transfer", "--devices", "0;1"], "invalid --devices '0;1'"),
    (["transfer", "--device", "cpu", "--devices", "0,1"], "--devices 1: out of range"),
]


IDS = [" ".join(a)[:40] for a, _ in REFUSED]


# (a good step, the same command with one bad value, the words of the error naming that value)
CASES = [
    (["stream", "--sizes", "1K:4K"], ["stream", "--sizes", "1X"], "invalid --sizes '1X'"),
    (["stream", "--dtype", "float"], ["stream", "--dtype", "bogus"], "unknown dtype 'bogus' for stream"),
    (["stream", "--kernels", "Triad"], ["stream", "--kernels", "Tirad"], "unknown kernel 'Tirad'"),
    (["stream", "-s", "1K"], ["stream", "-s", "0"], "invalid -s/--arraysize '0'"),
    (["gemm", "--dtype", "fp32,bf16"], ["gemm", "--dtype", "bogus"], "unknown dtype 'bogus'"),
    (["gemm", "-m", "1K"], ["gemm", "-m", "1X"], "invalid -m '1X'"),
    (["gemm", "--transA", "T"], ["gemm", "--transA", "Q"], "invalid --transA 'Q'"),
    (["gemm", "--samples", "1"], ["gemm", "--samples", "0"], "--samples and --cold-iters must be at least 1"),
    (["transfer", "--bytes", "1K"], ["transfer", "--bytes", "1X"], "invalid --bytes '1X'"),
    # G1 names a GPU the node may have: only the node can judge it
    (["transfer", "--test", "G0->G1"], ["transfer", "--test", "G0->Q1"], "invalid memory type 'Q'"),
    (["transfer", "--method", "kernel"], ["transfer", "--method", "dma"], "unknown --method 'dma'"),
    (["transfer", "--matrix", "h2d"], ["transfer", "--matrix", "x2y"], "unknown --matrix 'x2y'"),
    (["net", "--streams", "8"], ["net", "--streams", "0"], "--streams must be 1..128, got 0"),
    (["net", "--link-rate", "100Gbps"], ["net", "--link-rate", "fast"], "invalid rate 'fast'"),
    (["train", "--heads", "8"], ["train", "--heads", "3"], "--hidden 64 is not divisible by --heads 3"),
    (["train", "--warmup", "1"], ["train", "--warmup", "20"], "--warmup 20 leaves none of the 20 --steps"),
    (["train", "--strategy", "hybrid", "--shard-size", "2"], ["train", "--shard-size", "2"],
     "--shard-size is for --strategy hybrid"),
    # bf16 on auto: the node's GPUs decide; on --device cpu every node refuses it
    (["train", "--dtype", "bf16"], ["train", "--device", "cpu", "--dtype", "bf16"], "--dtype bf16 needs a GPU"),
    (["ddp-comm", "--size", "64M"], ["ddp-comm", "--size", "1X"], "invalid --size '1X'"),
    (["ddp-comm", "--bucket-cap-mb", "50"], ["ddp-comm", "--bucket-cap-mb", "1e300"], "--bucket-cap-mb 1e+300"),
    (["ddp-comm", "--link-speed", "100Gbps"], ["ddp-comm", "--link-speed", "fast"], "invalid rate 'fast'"),
    (["infer-tp", "--batch-sizes", "8,16"], ["infer-tp", "--batch-sizes", "0,8"], "--batch-sizes must be positive"),
    (["infer-tp", "--batch-sizes", "8..64"], ["infer-tp", "--batch-sizes", "1X..8"], "invalid --batch-sizes '1X'"),
    (["infer-tp", "--dtype", "fp16"], ["infer-tp", "--device", "cpu", "--dtype", "fp16"],
     "--dtype fp16 needs a GPU"),
]


def _runs(db: str) -> list[object]:
    from clusterbench.store import Store

    if not Path(db).exists():
        return []
    with Store.open(db) as s:
        return list(s.list_runs())


STEP = ["stream", "--device", "cpu", "-s", "1K", "-n", "2"]


PROFILE = {"name": "probe", "suite": [{"name": "stream", "command": STEP}],
           "criteria": [{"name": "triad", "benchmark": "stream", "metric": "bandwidth",
                         "params": {"kernel": "Triad"}, "op": ">=", "value": 1e-9, "unit": "GB/s"}]}


def _sweep_qualify_profile(tmp_path: Path) -> str:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps(PROFILE))
    return str(p)
