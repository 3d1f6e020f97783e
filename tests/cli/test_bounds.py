"""Tests of clusterbench.cli.bounds: number options whose bounds nothing slips through."""

from __future__ import annotations

import pytest
from judge_helpers import cli

HUGE = "9" * 400
TAIL = ["--", "coll", "all_reduce"]

# Every count the fault suite found unbounded: each ran until killed (a 400-digit -n) or went
# into a generated artifact (an sbatch script, a manifest). Each is refused by click before
# anything starts, in one line naming the option and its bound.
UNBOUNDED = [
    ["coll", "all_reduce", "-n", HUGE], ["coll", "all_reduce", "-w", HUGE], ["coll", "all_reduce", "-c", HUGE],
    ["coll", "all_reduce", "-N", HUGE], ["coll", "all_reduce", "--repeat", HUGE],
    ["stream", "-n", HUGE],
    ["gemm", "-i", HUGE], ["gemm", "--cold-iters", HUGE], ["gemm", "--samples", HUGE],
    ["train", "--steps", HUGE],
    ["ddp-comm", "--steps", HUGE], ["ddp-comm", "--warmup", HUGE],
    ["infer-tp", "--iters", HUGE], ["infer-tp", "--warmup", HUGE],
    ["sweep", "--hosts", "a,b", "--rounds", HUGE], ["sweep", "--hosts", "a,b", "--procs-per-node", HUGE],
    ["sweep", "--hosts", "a,b", "--single-procs", HUGE], ["sweep", "--hosts", "a,b", "--batch", HUGE],
    ["launch", "slurm", "--print", "--nodes", HUGE, *TAIL],
    ["launch", "slurm", "--print", "--procs-per-node", HUGE, *TAIL],
    ["launch", "slurm", "--print", "--gpus-per-node", HUGE, *TAIL],
    ["validate", "1", "--profile", "cpu-smoke", "--nodes", HUGE],
    ["report", "1", "--nodes", HUGE],
]


@pytest.mark.parametrize("argv", UNBOUNDED, ids=lambda a: " ".join(w[:12] for w in a[:4]))
def test_a_count_past_its_bound_is_refused_before_anything_starts(capsys, db, argv):
    code, out, err = cli(capsys, *argv, "--db", db) if "--" not in argv else cli(capsys, *argv)
    assert code == 2, err
    assert out == "" and err.count("\n") == 1, err
    assert "is not a whole number from" in err and HUGE not in err, err


# One rule for every count (units.whole_number): the digits of other scripts, which int() and
# str.isdigit() take, are refused by every option, selector and size alike.
OTHER_DIGITS = [
    (["results", "delete", "\uff19"], "invalid selector"),     # full-width 9
    (["results", "tag", "\u0663", "k=v"], "invalid selector"),  # Arabic-Indic 3
    (["results", "show", "1..\uff19"], "invalid selector"),
    (["results", "list", "--limit", "\u0663"], "ASCII digits only"),
    (["coll", "all_reduce", "-b", "\u0663"], "invalid minbytes (-b)"),
    (["coll", "all_reduce", "--np", "\u0663"], "ASCII digits only"),
    (["coll", "all_reduce", "-n", "\uff15"], "ASCII digits only"),
    (["stream", "--sizes", "1K:8K:\u0663"], "FACTOR must be an integer"),
    (["results", "list", "--since", "\u0663d"], "--since"),
]


@pytest.mark.parametrize(("argv", "words"), OTHER_DIGITS)
def test_digits_of_other_scripts_are_refused_everywhere(capsys, db, argv, words):
    from clusterbench.records import Measurement, Run
    from clusterbench.store import Store

    with Store.open(db) as s:   # runs 1..9 exist: a digit read as 9 or 3 would pick one
        for _ in range(9):
            s.save_run(Run("stream", hosts=["h"]), [Measurement("stream", "bandwidth", 1.0, "GB/s", {})])
    code, out, err = cli(capsys, *argv, "--db", db)
    assert code == 2, err
    assert words in err and err.count("\n") == 1, err
    with Store.open(db) as s:
        assert len(s.list_runs()) == 9 and all(not r.tags for r in s.list_runs())


def test_an_empty_size_is_an_error_not_the_default(capsys, db):
    # trend --bytes '' (a script's empty variable) read as no --bytes: each run's largest size
    code, _, err = cli(capsys, "trend", "--bytes", "", "--db", db)
    assert code == 2 and "invalid --bytes ''" in err, err


def test_a_thread_count_past_its_bound_is_refused_before_any_rank(capsys, db, monkeypatch):
    # OMP_NUM_THREADS=99999999999999999999 ended in a ValueError in every rank and a stored failed run
    monkeypatch.setenv("OMP_NUM_THREADS", "99999999999999999999")
    code, out, err = cli(capsys, "stream", "--device", "cpu", "-n", "2", "--db", db)
    assert code == 2 and "invalid OMP_NUM_THREADS '99999999999999999999'" in err and err.count("\n") == 1, err


def test_a_kubernetes_quantity_past_an_int64_is_refused(capsys):
    code, out, err = cli(capsys, "launch", "k8s", "--shm-size", HUGE, *TAIL)
    assert code == 2 and "invalid --shm-size" in err and "more than a Kubernetes quantity holds" in err, err
    code, out, err = cli(capsys, "launch", "k8s", "--shm-size", "8Ei", *TAIL)
    assert code == 2 and "more than a Kubernetes quantity holds" in err, err
    code, out, _ = cli(capsys, "launch", "k8s", "--shm-size", "7Ei", *TAIL)
    assert code == 0 and "sizeLimit: 7Ei" in out


def test_count_reads_whole_numbers_as_units_do_and_shows_its_bound_in_help():
    import click
    from click.testing import CliRunner

    from clusterbench.cli.bounds import MAX_ITERATIONS, Count

    @click.command()
    @click.option("-n", type=Count(1, MAX_ITERATIONS), default=5, show_default=True, help="Iterations.")
    def command(n: int) -> None:
        click.echo(n)

    runner = CliRunner()
    assert runner.invoke(command, ["-n", " 12 "]).output == "12\n"
    for bad in ("0", "1000001", "+5", "1_0", "5.0", "\u0663", HUGE):
        r = runner.invoke(command, ["-n", bad])
        assert r.exit_code == 2 and "is not a whole number from 1 to 1,000,000" in r.output, (bad, r.output)
    assert "1<=x<=1000000" in runner.invoke(command, ["--help"]).output
