"""The exit codes of README's table, command by command: 0 ok, 1 the thing measured or judged is
bad, 2 usage or input error. Each row runs a real command on a small database of real logs."""

from __future__ import annotations

import re

import pytest
from judge_helpers import run_cli
from paths import DATA, ROOT

from clusterbench.records import Measurement, Run
from clusterbench.store import Store

NCCL = DATA / "nccl-tests"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("codes")
    path = str(tmp / "cb.db")
    for name, tag in [("seed-mi300x-rccl-all_reduce-8gpu.txt", "seed=mi300x"),
                      ("superbench-nccl_allreduce.log", "env=other")]:
        assert run_cli("import", NCCL / name, "--db", path, "--tag", tag)[0] == 0
    assert run_cli("import", DATA / "transferbench" / "seed-mi300x-example-cfg.txt", "--db", path,
                   "--tag", "seed=mi300x")[0] == 0
    # two groups of four runs, B 20% slower: compare calls every row worse
    with Store.open(path) as s:
        for side, scale in (("fast", 1.0), ("slow", 0.8)):
            for i in range(4):
                s.save_run(Run(benchmark="coll", tags={"ab": side}),
                           [Measurement("all_reduce", "busbw", scale * (100 + i * 0.5), "GB/s",
                                        {"bytes": 1 << 30, "placement": "in"})])
    (tmp / "notes.txt").write_text("a meeting note, nothing measured\n")
    (tmp / "none.yaml").write_text("criteria:\n  - {name: x, benchmark: stream, metric: bandwidth, "
                                   "op: '>=', value: 1}\n")
    return {"db": path, "tmp": tmp}


# (exit code, argv; {db} is the database, {tmp} its directory)
ROWS = [
    (0, ["results", "show", "last", "--db", "{db}"]),
    (0, ["results", "list", "--benchmark", "rccl-tests", "--db", "{db}"]),
    (0, ["validate", "bench:all_reduce,seed=mi300x", "--profile", "amd-mi300x-oem", "--db", "{db}"]),
    (0, ["compare", "ab=fast", "ab=slow", "--db", "{db}"]),
    (0, ["compare", "ab=fast", "ab=slow", "--fail-on", "noisy", "--db", "{db}"]),
    (0, ["import", NCCL / "superbench-nccl_broadcast.log", "--db", "{tmp}/scratch.db"]),
    (0, ["env", "diff", "1", "1", "--exit-code", "--db", "{db}"]),
    (0, ["env", "diff", "1", "2", "--db", "{db}"]),
    (1, ["validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", "{db}"]),
    (1, ["compare", "ab=fast", "ab=slow", "--fail-on", "worse", "--db", "{db}"]),
    (1, ["compare", "ab=fast", "ab=slow", "--fail-on", "any", "--json", "--db", "{db}"]),
    (1, ["import", NCCL / "issue322-16G-test-nccl-failure-truncated.txt", "--db", "{tmp}/scratch.db"]),
    (1, ["import", "--dry-run", NCCL / "issue280-4090-test-nccl-failure-truncated.txt"]),
    (1, ["preflight", "--root", DATA / "sysfs" / "h100-node", "--expect-nic-speed", "400G"]),
    (1, ["env", "diff", "1", "2", "--exit-code", "--db", "{db}"]),
    (2, ["results", "show", "99999999999999999999", "--db", "{db}"]),
    (2, ["results", "show", "env=nothing", "--db", "{db}"]),
    (2, ["results", "show", "7..3", "--db", "{db}"]),
    (2, ["results", "export", "1", "--csv", "--json", "--db", "{db}"]),
    (2, ["results", "show", "last", "--since", "yesterday", "--db", "{db}"]),
    (2, ["validate", "--profile", "{tmp}/none.yaml", "--db", "{db}"]),
    (2, ["validate", "--profile", "no-such-profile", "--db", "{db}"]),
    (2, ["compare", "ab=fast", "ab=slow", "--fail-on", "slower", "--db", "{db}"]),
    (2, ["import", "{tmp}/notes.txt", "--db", "{tmp}/scratch.db"]),
    (2, ["import", NCCL / "seed-mi300x-rccl-all_reduce-8gpu.txt", "{tmp}/notes.txt", "--db", "{tmp}/scratch.db"]),
    (2, ["env", "diff", "seed=mi300x", "1", "--db", "{db}"]),
    (2, ["env", "--json", "show", "last", "--db", "{db}"]),
    (2, ["stream", "--float", "--dtype", "double"]),
    (2, ["coll", "all_reduce", "-f", "2", "-i", "1M"]),
    (2, ["net", "--no-bandwidth", "--no-latency"]),
    (2, ["sweep", "--hosts", "a,b", "--batch", "2", "--pairs", "ring"]),
    (2, ["launch", "slurm", "--print", "--submit", "--", "coll", "all_reduce"]),
    (2, ["launch", "slurm", "--json", "--", "coll", "all_reduce"]),
    (2, ["launch", "k8s", "--apply", "--print", "--", "coll", "all_reduce"]),
    (2, ["launch", "torchrun", "--hosts", "a,b", "--node-rank", "0", "--print", "--", "coll", "all_reduce"]),
    (2, ["results", "copy", "--from", "{tmp}/missing.db", "--to", "{tmp}/x.db"]),
    # numbers that would switch a check off or be taken for another value
    (2, ["sweep", "--hosts", "a,b", "--threshold", "nan", "--", "coll", "all_reduce"]),
    (2, ["sweep", "--hosts", "a,b", "--min-rel-dev", "-1", "--", "coll", "all_reduce"]),
    (2, ["sweep", "--hosts", "a,b", "--batch", "0", "--", "coll", "all_reduce"]),
    (2, ["sweep", "--hosts", "a,b", "--timeout", "inf", "--", "coll", "all_reduce"]),
    (2, ["launch", "slurm", "--print", "--nodes", "0", "--", "coll", "all_reduce"]),
    (2, ["launch", "k8s", "--print", "--procs-per-node", "0", "--", "coll", "all_reduce"]),
    (2, ["launch", "k8s", "--print", "--nodes", "2", "--", "nosuchcmd"]),
    (2, ["launch", "dstack", "--print", "--nodes", "2", "--", "coll", "all_reduce", "--bogus"]),
    (2, ["net", "--latency-bytes", "-5"]),
    (2, ["trend", "--since", "1e9d", "--db", "{db}"]),
    (2, ["transfer", "--bytes", "1T", "--matrix", "h2h", "--db", "{tmp}/scratch.db"]),   # more than host memory
    (2, ["stream", "--sizes", "1T:2T", "-n", "2", "--db", "{tmp}/scratch.db"]),
    (2, ["gemm", "--alpha", "nan"]),
    (2, ["train", "--steps", "2", "--warmup", "5", "--batch", "4"]),
    (2, ["infer-tp", "--np", "1", "--hidden", "-4"]),
    (2, ["preflight", "--expect-compute-partition", "ZZZ"]),
    (2, ["stream", "-s", "64K", "-n", "2", "--timeout", "nan"]),
    (2, ["ddp-comm", "--telemetry-interval", "inf"]),
]


def _argv(row: list, where: dict) -> list[str]:
    return [str(a).format(db=where["db"], tmp=where["tmp"]) for a in row]


@pytest.mark.parametrize("code, argv", ROWS, ids=[" ".join(map(str, r[1][:4]))[:50] for r in ROWS])
def test_exit_code(db, code, argv):
    got, out, err = run_cli(*_argv(argv, db))
    assert got == code, f"exit {got}, want {code}\n{out[-2000:]}\n{err}"
    if code == 2:  # one line saying why, never a traceback
        assert err.startswith("clusterbench: error: ") and "Traceback" not in err, err


def test_readme_table_is_what_the_rows_run():
    """README's table names the codes tested here, and each command it names has a row here
    with that code (or a test elsewhere that needs a cluster or a GPU)."""
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \|([^|]*)\|([^|]*)\|$", table, re.M)
    assert {int(c) for c, _, _ in rows} == {0, 1, 2, 74, 129, 130, 143}  # 74/129/130/143: tests/system/test_coll.py
    elsewhere = {"sweep": "tests/system/test_launch.py"}  # a suspect needs several hosts
    checked = set()
    for code, _, examples in rows:
        for cmd in re.findall(r"`([a-z][a-z ]*?)(?: --[a-z-]+.*?)?`", examples):
            if cmd in ("complete", "failed", "incomplete"):  # run statuses, not commands
                continue
            checked.add(cmd)
            ran = [argv for c, argv in ROWS if c == int(code) and " ".join(map(str, argv)).startswith(cmd)]
            assert ran or cmd in elsewhere, f"README: `{cmd}` exits {code}, but no row here runs it"
    assert {"validate", "compare", "import", "preflight", "env diff", "results export"} <= checked


@pytest.mark.parametrize("argv, names", [
    (["results", "export", "1", "--csv", "--json", "--db", "{db}"], ("--json", "--csv")),
    (["stream", "--float", "--dtype", "double"], ("--float", "--dtype")),
    (["stream", "-s", "1M", "--sizes", "1M:4M"], ("--arraysize", "--sizes")),
    (["coll", "all_reduce", "-f", "2", "-i", "1M"], ("-f/--stepfactor", "-i/--stepbytes")),
    (["net", "--no-bandwidth", "--no-latency"], ("--no-bandwidth", "--no-latency")),
    (["sweep", "--hosts", "a,b", "--batch", "2", "--pairs", "ring"], ("--batch", "--pairs")),
    (["launch", "slurm", "--print", "--submit", "--", "coll"], ("--print", "--submit")),
    (["launch", "k8s", "--apply", "--print", "--", "coll"], ("--apply", "--print")),
    (["launch", "k8s", "--install", "x", "--no-install", "--", "coll", "all_reduce"], ("--install", "--no-install")),
    (["launch", "torchrun", "--hosts", "a,b", "--local-addr", "a", "--", "coll"], ("--hosts", "--local-addr")),
    (["env", "--json", "diff", "1", "2", "--db", "{db}"], ("--json", "env diff")),
])
def test_options_that_exclude_each_other_are_refused_in_one_line(db, argv, names):
    """Never silently one of two contradicting options: one line naming both, exit 2."""
    code, out, err = run_cli(*_argv(argv, db))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert all(n in err for n in names), err
