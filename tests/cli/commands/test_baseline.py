"""Tests of clusterbench.cli.commands.baseline: ``clusterbench baseline create``."""

import json
import random

import numpy as np
import pytest
import yaml
from judge_helpers import cli, coll_rows, json_lines, run_cli, save
from judged_rows import PARAMS, ROW, _busbw, _busbw_run
from paths import TESTS

from clusterbench.judge.profile_yaml import load_yaml
from clusterbench.judge.profiles import load_profile
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def test_baseline_create_leaves_out_outlier_run_and_validates(tmp_path, db, capsys):
    rng = random.Random(21)
    for i in range(5):
        save(db, coll_rows(1.0, rng, noise_small=0.01), tags={"role": "good", "i": str(i)})
    bad = save(db, coll_rows(0.7, rng, noise_small=0.01), tags={"role": "good", "i": "bad"})
    out = tmp_path / "base.yaml"
    rc, stdout, err = cli(capsys, "baseline", "create", "role=good", "-o", str(out), "--db", db, "--json")
    assert rc == 0
    (info,) = json_lines(stdout)
    assert info["criteria"] > 0
    assert {lo["run"] for lo in info["left_out"]} == {bad}
    data = yaml.safe_load(out.read_text())
    assert all(c["metric"] == "busbw" and c["params"]["bytes"] >= 1 << 20 for c in data["criteria"])
    assert all(c["op"] == ">=" and c["pct"] == 90 for c in data["criteria"])
    # a new good run passes, the degraded one fails
    good = save(db, coll_rows(1.0, rng, noise_small=0.01))
    rc, stdout, _ = cli(capsys, "validate", str(good), "--profile", str(out), "--db", db)
    assert rc == 0, stdout
    rc, stdout, _ = cli(capsys, "validate", str(bad), "--profile", str(out), "--db", db)
    assert rc == 1 and "FAIL" in stdout


def test_baseline_says_a_left_out_run_once_with_its_worst_row_and_the_runs_as_ranges(tmp_path, db, capsys):
    rng = random.Random(21)
    ids = [save(db, coll_rows(1.0, rng, noise_small=0.01), tags={"role": "good"}) for _ in range(5)]
    bad = save(db, coll_rows(0.7, rng, noise_small=0.01), tags={"role": "good"})
    rc, stdout, err = cli(capsys, "baseline", "create", "role=good", "-o", str(tmp_path / "b.yaml"), "--db", db)
    assert rc == 0
    rc, js, _ = cli(capsys, "baseline", "create", "role=good", "-o", str(tmp_path / "c.yaml"), "--db", db, "--json")
    (info,) = json_lines(js)
    rows = [lo for lo in info["left_out"] if lo["run"] == bad]
    assert len(rows) > 1   # the degraded run is out of every row
    lines = [ln for ln in err.splitlines() if ln.startswith("# left out run")]
    assert lines == [ln for ln in lines if ln.startswith(f"# left out run {bad} for {len(rows)} rows, the worst ")]
    assert len(lines) == 1
    worst = max(rows, key=lambda lo: abs(lo["z"]))
    assert f"the worst {worst['row']}:" in lines[0]
    assert f"from run(s) {min(ids)}-{bad}" in stdout


def test_baseline_times_use_upper_bound(tmp_path, db, capsys):
    for v in (10.0, 10.1, 9.9):
        save(db, [Measurement("gemm", "time_us", v, "us", {"m": 64, "n": 64, "k": 64, "dtype": "fp32"})],
             tags={"g": "1"})
    out = tmp_path / "t.yaml"
    rc, _, _ = cli(capsys, "baseline", "create", "g=1", "-o", str(out), "--metric", "time_us", "--db", db)
    assert rc == 0
    (c,) = yaml.safe_load(out.read_text())["criteria"]
    assert c["op"] == "<=" and c["pct"] == 110 and c["baseline"] == 10.0


def test_baseline_without_usable_metrics_is_usage_error(tmp_path, db, capsys):
    save(db, [Measurement("gemm", "time_us", 1.0, "us", {})])
    rc, _, err = cli(capsys, "baseline", "create", "1", "-o", str(tmp_path / "x.yaml"), "--db", db)
    assert rc == 2 and "have no headline measurements" in err
    assert not (tmp_path / "x.yaml").exists()


def test_baseline_of_rows_all_below_min_bytes_names_the_option(tmp_path, db, capsys):
    # they have busbw rows, every one under the 1M floor: "no headline measurements" was wrong
    for _ in range(3):
        save(db, [Measurement("all_reduce", "busbw", 5.0, "GB/s", {"bytes": 65536, "dtype": "float"})],
             tags={"g": "small"})
    rc, _, err = cli(capsys, "baseline", "create", "g=small", "-o", str(tmp_path / "x.yaml"), "--db", db)
    assert rc == 2 and "below --min-bytes 1M" in err, err
    rc, _, err = cli(capsys, "baseline", "create", "g=small", "-o", str(tmp_path / "x.yaml"), "--min-bytes", "1K",
                     "--db", db)
    assert rc == 0, err


def test_baseline_output_that_is_not_a_file_is_refused_and_left_alone(tmp_path, db, capsys):
    import os

    save(db, coll_rows(1.0, random.Random(1)), tags={"role": "good"})
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for out in (fifo, tmp_path):   # a FIFO (a rename would replace it) and a directory
        rc, _, err = cli(capsys, "baseline", "create", "role=good", "-o", str(out), "--db", db)
        assert rc == 2 and err.count("\n") == 1 and str(out) in err
    assert fifo.is_fifo()


def test_baseline_leaves_out_failed_and_incomplete_runs(tmp_path):
    """A failed run (wrong results) was averaged into a "known-good" bound without a word: with
    two good runs and one failed at 20 GB/s the median, and so the bound, fell."""
    db, out = tmp_path / "b.db", tmp_path / "golden.yaml"
    with Store.open(db) as store:
        good = [_busbw_run(store, v, {"env": "golden"}) for v in (100.0, 102.0)]
        bad = _busbw_run(store, 20.0, {"env": "golden"}, status="failed")
    code, text, err = run_cli("baseline", "create", "env=golden", "-o", out, "--json", "--db", db)
    assert code == 0, err
    [summary] = json_lines(text)
    assert summary["runs"] == good
    assert f"left out run {bad}: its status is failed" in err
    assert "median 101 GB/s" in out.read_text()


def test_baseline_of_failed_runs_only_is_refused(tmp_path):
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        ids = [_busbw_run(store, 100.0, {"env": "x"}, status=s) for s in ("failed", "incomplete")]
    code, _, err = run_cli("baseline", "create", "env=x", "-o", tmp_path / "p.yaml", "--db", db)
    assert code == 2
    assert err.strip() == (f"clusterbench: error: none of run(s) {ids[0]}, {ids[1]} is complete: no known-good "
                           "run to build a baseline from")
    assert not (tmp_path / "p.yaml").exists()


def test_baseline_of_rows_at_zero_says_so(tmp_path):
    """Rows whose median is 0 were dropped unseen, and with nothing else the error said the runs
    had no busbw measurements at all."""
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        for _ in range(3):
            store.save_run(Run(benchmark="coll", hosts=["h1"], ranks=8, tags={"env": "z"}),
                           [Measurement("all_reduce", "busbw", 0.0, "GB/s", ROW),
                            Measurement("all_reduce", "time_us", 10.0, "us", ROW)])
    code, _, err = run_cli("baseline", "create", "env=z", "-o", tmp_path / "p.yaml", "--db", db)
    assert code == 2
    assert "have a median of 0 or below" in err and "no headline measurements" not in err
    # beside a row that makes a bound, the one at 0 is named on stderr, with --json too
    code, text, err = run_cli("baseline", "create", "env=z", "-o", tmp_path / "p.yaml", "--metric", "busbw",
                              "--metric", "time_us", "--json", "--db", db)
    assert code == 0
    assert json_lines(text)[0]["criteria"] == 1
    assert "# skipped all_reduce busbw" in err and "median 0 over 3 run(s)" in err


def test_baseline_error_names_the_runs_without_rows(tmp_path):
    """A run with no measurement at all gave "runs  have no headline measurements": no run named."""
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        rid = store.save_run(Run(benchmark="coll", hosts=["h1"], ranks=8, tags={"env": "e"}), [])
    code, _, err = run_cli("baseline", "create", "env=e", "-o", tmp_path / "p.yaml", "--db", db)
    assert code == 2
    assert f"runs {rid} have no headline measurements" in err


def test_baseline_pct_just_above_100_is_shown_as_given(tmp_path):
    """``:g`` printed 100.0001 as "got 100", a value the check accepts."""
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        _busbw_run(store, 100.0, {"env": "p"})
    code, _, err = run_cli("baseline", "create", "env=p", "-o", tmp_path / "p.yaml", "--pct", "100.0001",
                           "--db", db)
    assert code == 2
    assert "got 100.0001" in err


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "x\x1b[31m"])
def test_baseline_name_empty_or_with_control_characters_is_refused(tmp_path, name):
    code, out, err = run_cli("baseline", "create", "1", "-o", str(tmp_path / "b.yaml"), "--name", name,
                             "--db", str(tmp_path / "none.db"))
    assert code == 2 and err.startswith("clusterbench: error: --name") and err.count("\n") == 1, err
    assert not (tmp_path / "b.yaml").exists()


def test_baseline_of_runs_in_two_units_is_one_bound(capsys, db, tmp_path) -> None:
    for v, u in ((100.0, "GB/s"), (101.0, "GB/s"), (99_000.0, "MB/s")):
        save(db, [Measurement("all_reduce", "busbw", v, u, dict(PARAMS))], tags={"g": "x"})
    out = tmp_path / "p.yaml"
    code, _, err = cli(capsys, "baseline", "create", "g=x", "-o", str(out), "--db", db)
    assert code == 0, err
    text = out.read_text()
    assert "baseline: 100" in text and "GB/s" in text, text


def test_baseline_near_the_largest_float_writes_a_profile_validate_loads(capsys, db, tmp_path) -> None:
    for _ in range(2):
        save(db, _busbw(1.7e308), tags={"g": "x"})
    profile = str(tmp_path / "big.yaml")
    code, _, err = cli(capsys, "baseline", "create", "g=x", "-o", profile, "--db", db)
    assert code == 0, err
    code, out, err = cli(capsys, "validate", "g=x", "--profile", profile, "--json", "--db", db)
    assert code == 0, err
    crit = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "criterion"]
    assert [c["status"] for c in crit] == ["pass"]


def test_baseline_bound_is_pct_of_the_median_of_run_medians(capsys, db, tmp_path) -> None:
    runs = [[100.0, 104.0, 90.0], [101.0, 99.0], [97.0, 98.0, 99.5, 100.5]]
    for values in runs:
        save(db, [m for v in values for m in _busbw(v)], tags={"g": "b"})
    profile = tmp_path / "b.yaml"
    code, out, err = cli(capsys, "baseline", "create", "g=b", "-o", str(profile), "--pct", "85", "--json",
                         "--db", db)
    assert code == 0, err
    import yaml
    crit = yaml.safe_load(profile.read_text())["criteria"]
    expected = float(np.median([np.median(v) for v in runs]))
    assert len(crit) == 1 and crit[0]["baseline"] == pytest.approx(expected) and crit[0]["pct"] == 85


def test_baseline_pct_above_100_is_refused(capsys, tmp_path):
    """A --pct above 100 wrote a bandwidth bound above the median: validating the runs the
    baseline came from failed half of them."""
    db = tmp_path / "r.db"
    seed = TESTS / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
    assert cli(capsys, "import", seed, "--db", db)[0] == 0
    code, _, err = cli(capsys, "baseline", "create", "1", "-o", tmp_path / "p.yaml", "--pct", "150", "--db", db)
    assert code == 2 and "at most 100" in err and len(err.strip().splitlines()) == 1


def test_baseline_round_trip_passes_and_one_percent_stricter_fails(seeded, tmp_path):
    """baseline create, then validate the same runs: every row passes, including a bidirectional
    pair's total (which a subset match made also judge its two legs, at half its bandwidth)."""
    out = tmp_path / "b.yaml"
    code, _, err = run_cli("baseline", "create", "seed=mi300x", "-o", out, "--pct", "100", "--db", seeded)
    assert code == 0, err
    profile = load_profile(str(out))
    assert any(c.absent == ("leg",) for c in profile.criteria)
    # stream rows are per GPU (two tables): at 100% of their median one of two is below it
    stream = [c for c in profile.criteria if c.benchmark == "stream"]
    code, text, _ = run_cli("validate", "seed=mi300x", "--profile", out, "--db", seeded)
    assert f"# {len(profile.criteria) - len(stream)} pass, {len(stream)} fail, 0 skipped, 0 error" in text
    code, text, _ = run_cli("baseline", "create", "seed=mi300x", "-o", out, "--pct", "90", "--db", seeded)
    code, text, _ = run_cli("validate", "seed=mi300x", "--profile", out, "--db", seeded)
    assert code == 0 and f"# {len(profile.criteria)} pass, 0 fail" in text
    # every other criterion 1% above its baseline: exactly those fail
    crits = [c for c in load_profile(str(out)).criteria if c.benchmark != "stream"]
    stricter = out.read_text()
    doc = load_yaml(stricter)
    for i, c in enumerate(doc["criteria"]):
        if c["benchmark"] != "stream" and i % 2 == 0:
            c["pct"] = 101.0
    strict = tmp_path / "strict.yaml"
    strict.write_text(json.dumps({"name": "strict", "criteria": [dict(c) for c in doc["criteria"]]}))
    outcomes = {d["criterion"]: d["status"] for d in json_lines(
        run_cli("validate", "seed=mi300x", "--profile", strict, "--db", seeded, "--json")[1]) if d["kind"] == "criterion"}
    want = {c["name"]: "fail" if c.get("pct") == 101.0 else "pass" for c in doc["criteria"]}
    assert outcomes == want and len(crits) > 100


def test_a_baseline_is_for_the_hardware_its_runs_were_on(tmp_path, db, capsys):
    """A site profile from known-good H100 runs: an A100 run is not judged by it, a slow H100 fails it."""
    def stream(value: float, name: str, tag: str) -> int:
        ms = [Measurement("stream", "bandwidth", value * f, "GB/s",
                          {"kernel": "Triad", "array_size": 1 << 27, "dtype": "double", "device": "cuda:0"})
              for f in (1.0, 1.001)]
        return save(db, ms, benchmark="stream", hosts=["gpu01"], ranks=1, devices=[name], tags={"role": tag},
                    meta={"device_type": "cuda", "device_names": {"cuda:0": name}})

    for v in (3000.0, 3010.0, 2995.0):
        stream(v, "NVIDIA H100 80GB HBM3", "good")
    out = tmp_path / "site.yaml"
    rc, _, err = cli(capsys, "baseline", "create", "role=good", "-o", out, "--db", db)
    assert rc == 0, err
    data = yaml.safe_load(out.read_text())
    assert data["hardware"] == {"devices": ["NVIDIA H100 80GB HBM3"]}
    slow = stream(2400.0, "NVIDIA H100 80GB HBM3", "new")
    a100 = stream(1700.0, "NVIDIA A100-SXM4-80GB", "new")
    rc, stdout, _ = cli(capsys, "validate", slow, "--profile", out, "--db", db)
    assert rc == 1 and "FAIL" in stdout
    rc, stdout, _ = cli(capsys, "validate", a100, "--profile", out, "--db", db, "--json")
    assert rc == 0 and {(o["status"], o["reason"]) for o in json_lines(stdout) if o["kind"] == "criterion"} == {
        ("skipped", "hardware")}
