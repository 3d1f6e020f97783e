"""Every command's --json case: its command line, its exit code and the kinds of line it must print;
the benchmark commands run tiny."""

from __future__ import annotations

from pathlib import Path

from paths import DATA

SYSFS = DATA / "sysfs"


TINY_COLL = ["coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu",
             "--telemetry-interval", "0"]


def _cases(s: dict[str, str]) -> list[tuple[str, list[str], int, set[str]]]:
    """(id, argv without --json, exit code, kinds that must appear)."""
    db, tmp = ["--db", s["db"]], Path(s["tmp"])
    bad = tmp / "notes.txt"
    return [
        ("results list", ["results", "list", *db], 0, {"run"}),
        ("results list --benchmark", ["results", "list", "--benchmark", "collectives", "--since", "1d", *db], 0,
         {"run"}),
        ("results show", ["results", "show", "last", "seed=mi300x", *db], 0, {"measurement", "run", "efficiency"}),
        ("results show last~1", ["results", "show", "last~1", *db], 0, {"measurement", "run"}),
        ("results show bench:", ["results", "show", "bench:babelstream", *db], 0, {"measurement", "run"}),
        ("results export", ["results", "export", "1..3", *db], 0, {"measurement", "run"}),
        ("results copy", ["results", "copy", "--from", s["db"], "--to", str(tmp / "copy.db")], 0, {"summary"}),
        ("validate", ["validate", "seed=mi300x", "--profile", "amd-mi300x-oem", *db], 1,
         {"criterion", "percent_of_peak", "summary"}),
        ("validate efficiency", ["validate", "bench:all_reduce,seed=mi300x", "--profile", "amd-mi300x-oem",
                                 "--link-speed", "100Gbps", "--nodes", "2", *db], 0,
         {"criterion", "efficiency", "summary"}),
        ("validate note", ["validate", "bench:stream", "--profile", "amd-mi300x-oem", "--link-speed", "100Gbps",
                           *db], 0, {"criterion", "note", "summary"}),
        ("compare", ["compare", "env=a", "env=b", "--fail-on", "any", *db], 0, {"comparison", "summary"}),
        ("baseline create", ["baseline", "create", "env=a", "env=b", "-o", str(tmp / "golden.yaml"), *db], 0,
         {"summary"}),
        ("theory", ["theory", "--nodes", "2,4", "--run", "env=cpu", *db], 0, {"measurement", "efficiency"}),
        ("preflight", ["preflight", "--root", str(SYSFS / "h100-node"), "--expect-nic-speed", "400G"], 1,
         {"check", "summary"}),
        ("env", ["env", "--root", str(SYSFS / "mi300x-node")], 0, {"inventory"}),
        ("env show", ["env", "show", "last", "1", *db], 0, {"inventory"}),
        ("env diff", ["env", "diff", "1", "last", *db], 0, {"difference", "summary"}),
        ("report", ["report", "env=a", "env=b", "-o", str(tmp / "ab.html"), *db], 0, {"summary"}),
        ("import", ["import", str(DATA / "osu" / "rocm-blogs-gpu-aware-mpi-osu_bw-rocm-DD-16MiB.txt"), *db], 0,
         {"measurement", "run", "summary"}),
        ("import incomplete", ["import", str(DATA / "nccl-tests" / "issue280-4090-test-nccl-failure-truncated.txt"),
                               *db], 1, {"measurement", "run", "summary"}),
        ("import --dry-run", ["import", "--dry-run", str(DATA / "nccl-tests" / "superbench-nccl_broadcast.log")], 0,
         {"run", "summary"}),
        ("import unreadable", ["import", str(bad), *db], 2, {"summary"}),
        ("coll", [*TINY_COLL, *db], 0, {"measurement", "run"}),
    ]


# Benchmark commands share coll's printer; each runs once, tiny, below.
BENCHMARKS = {
    "stream": ["stream", "-s", "64K", "-n", "3"],
    "gemm": ["gemm", "-m", "64", "-n", "64", "-k", "64", "-i", "1", "--samples", "2", "--device", "cpu"],
    "transfer": ["transfer", "--bytes", "256K", "--iterations", "2", "--device", "cpu"],
    "net": ["net", "--np", "2", "--duration", "0.2", "--latency-iters", "10", "--link-rate", "10Gbps"],
    "train": ["train", "--np", "1", "--device", "cpu", "--steps", "2", "--warmup", "0", "--batch", "2",
              "--no-comm-share"],
    "ddp-comm": ["ddp-comm", "--np", "2", "--device", "cpu", "--size", "1M", "--layers", "2", "--steps", "2",
                 "--warmup", "1"],
    "infer-tp": ["infer-tp", "--np", "1", "--device", "cpu", "--hidden", "64", "--layers", "1",
                 "--batch-sizes", "8", "--iters", "1", "--warmup", "0"],
    "run": ["run", "--np", "2", "--device", "cpu", "--no-preflight"],
    "scaling": None,  # reads the train runs stored above: see test_scaling_lines
}
