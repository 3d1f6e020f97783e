"""A value every node would refuse (``stream --sizes 1X``, ``gemm --dtype bogus``) is refused by
``qualify`` and ``sweep`` before any step or node runs, for every benchmark command, with the line
the command itself prints for it; the same command with a good value still passes the check,
including values only the node can judge (its devices, its memory, its ranks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_helpers import cli

from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import UsageError
from clusterbench.sweep import run as sweep_run
from clusterbench.sweep.analyze import SubsetResult

CRITERION = {"name": "triad", "benchmark": "stream", "metric": "bandwidth", "op": ">=", "value": 1e-9,
             "unit": "GB/s"}

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
IDS = [" ".join(bad) for _, bad, _ in CASES]


def _profile(tmp_path: Path, steps: list[list[str]]) -> str:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps({"name": "probe", "criteria": [CRITERION],
                             "suite": [{"name": f"s{i}", "command": s} for i, s in enumerate(steps)]}))
    return str(p)


def _runs(db: str) -> list[object]:
    from clusterbench.store import Store

    if not Path(db).exists():
        return []
    with Store.open(db) as s:
        return list(s.list_runs())


@pytest.fixture
def launched(monkeypatch) -> list[tuple[str, ...]]:
    """The subsets a sweep launches (none really)."""
    seen: list[tuple[str, ...]] = []

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        seen.append(tuple(hosts))
        return SubsetResult(tuple(hosts), stage, 40.0 + index % 3 * 0.1, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    return seen


@pytest.mark.parametrize("good, bad, words", CASES, ids=IDS)
def test_qualify_refuses_a_bad_step_value_before_any_step_runs(capsys, db, tmp_path, good, bad, words):
    rc, out, err = cli(capsys, "qualify", "--profile", _profile(tmp_path, [good]), "--db", db, "--dry-run")
    assert rc == 0 and "s0" in out, err
    report = tmp_path / "q.html"
    rc, out, err = cli(capsys, "qualify", "--profile", _profile(tmp_path, [good, bad]), "--db", db,
                       "--no-preflight", "-o", str(report), "--json")
    assert rc == 2 and err.count("\n") == 1 and out == "", err
    assert "suite step 's1'" in err and words in err
    assert _runs(db) == [] and not report.exists()


@pytest.mark.parametrize("good, bad, words", CASES, ids=IDS)
def test_the_refusal_is_the_line_the_command_prints(capsys, db, tmp_path, good, bad, words):
    rc, _, own = cli(capsys, *bad, "--db", db)
    assert rc == 2 and words in own, own
    rc, _, err = cli(capsys, "qualify", "--profile", _profile(tmp_path, [bad]), "--db", db, "--dry-run")
    assert rc == 2 and err == own.replace("error: ", "error: suite step 's0': ", 1)


@pytest.mark.parametrize("good, bad, words", CASES[::3], ids=IDS[::3])
def test_qualify_under_launch_refuses_the_bad_step_too(capsys, db, tmp_path, good, bad, words):
    rc, _, err = cli(capsys, "qualify", "--profile", _profile(tmp_path, [good, bad]), "--db", db,
                     "--launch", "torchrun --nodes 2", "--dry-run")
    assert rc == 2 and "suite step 's1'" in err and words in err, err


@pytest.mark.parametrize("good, bad, words", CASES, ids=IDS)
def test_sweep_refuses_a_bad_test_value_before_any_node_runs(capsys, db, launched, good, bad, words):
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--on-fail", "drain", "--", *bad)
    assert rc == 2 and err.count("\n") == 1 and "the test after --" in err and words in err, err
    assert launched == [] and "scontrol" not in out and _runs(db) == []
    rc, _, err = cli(capsys, "sweep", "--hosts", "a,b", "--pairs", "none", "--db", db, "--json", "--", *good)
    assert rc in (0, 1) and launched == [("a",), ("b",)], err


@pytest.mark.parametrize("argv, words", [
    (["preflight", "--expect-nic-speed", "1X"], "--expect-nic-speed '1X'"),
    (["preflight", "--expect-model", " "], "--expect-model: an empty value"),
    (["preflight", "--apply"], "--apply and --undrain need --on-fail"),
])
def test_preflight_values_are_checked_as_preflight_checks_them(capsys, argv, words):
    with pytest.raises(UsageError, match="^step: ") as e:
        check_argv(argv, "step", values=True)
    assert words in str(e.value)
    rc, _, own = cli(capsys, *argv)
    assert rc == 2 and own.endswith(f"error: {str(e.value).removeprefix('step: ')}\n"), own
    check_argv(["preflight", "--expect-nic-speed", "400G", "--expect-model", "H100"], "step", values=True)
