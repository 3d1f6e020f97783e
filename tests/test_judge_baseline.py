import random

import yaml
from judge_helpers import cli, coll_rows, json_lines, save

from clusterbench.records import Measurement


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
