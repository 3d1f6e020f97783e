"""The store through the real CLI on both backends (an SQLite file and a real PostgreSQL
database): results list/show/export/tag/delete, import, a small collective run, results copy;
and PostgreSQL's authentication and connection errors, each one line with exit 2."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.records import Measurement, Run
from clusterbench.store import Store, TelemetrySample

DATA = Path(__file__).parent / "data"
SEED_NCCL = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
ALLTOALL = DATA / "nccl-tests" / "superbench-nccl_alltoall.log"


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def test_results_commands(capsys, any_db):
    rc, out, err = cli(capsys, "import", SEED_NCCL, "--db", any_db, "--tag", "seed=mi300x")
    assert rc == 0 and "run 1: rccl-tests" in out, err
    rc, live, err = cli(capsys, "coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu",
                        "--db", any_db)
    assert rc == 0, err
    assert f"# run 2 (complete) stored in {any_db}" in err

    rc, out, _ = cli(capsys, "results", "list", "--db", any_db)
    lines = out.splitlines()
    # what was measured, not the command that ran (coll) or "import"; an import names its tool
    assert rc == 0 and lines[0].split()[:4] == ["id", "started", "(UTC)", "measured"]
    assert lines[1].split()[:3] == ["2", lines[1].split()[1], "all_reduce"]
    assert lines[2].split()[2:4] == ["all_reduce", "[rccl-tests]"]
    assert "seed=mi300x" in lines[2] and " 250 " in lines[2]
    with Store.open(any_db) as s:   # 18 rows' figures, and on gloo the per-op statistics beside them
        ms2 = s.measurements(2)
    n2 = len(ms2)
    assert len([m for m in ms2 if m.metric != "iter_time_us"]) == 18
    rc, out, _ = cli(capsys, "results", "list", "--json", "--db", any_db)
    listed = [json.loads(x) for x in out.splitlines()]
    assert [(r["kind"], r["id"], r["measurements"]) for r in listed] == [("run", 2, n2), ("run", 1, 250)]
    assert [(r["benchmarks"], r["families"], r["tool"]) for r in listed] == [
        (["all_reduce"], ["collectives"], None), (["all_reduce"], ["collectives"], "rccl-tests")]
    for name, ids in [("all_reduce", [2, 1]), ("collectives", [2, 1]), ("allreduce", [2, 1]),
                      ("rccl-tests", [1]), ("stream", []), ("coll", [])]:
        rc, out, _ = cli(capsys, "results", "list", "--benchmark", name, "--json", "--db", any_db)
        assert rc == 0 and [json.loads(x)["id"] for x in out.splitlines()] == ids, name

    rc, out, _ = cli(capsys, "results", "show", "1", "--db", any_db)
    assert "8589934592    2147483648     float     sum      -1    47488  180.88  316.55      0" in out
    rc, shown, _ = cli(capsys, "results", "show", "2", "--db", any_db)
    assert [x for x in shown.splitlines() if re.match(r"\s+64\s+16\s+float", x)]

    rc, out, _ = cli(capsys, "results", "export", "1", "--db", any_db)
    *ms, last = [json.loads(x) for x in out.splitlines()]
    assert last["kind"] == "run" and last["tags"] == {"seed": "mi300x"} and len(ms) == 250
    assert {m["kind"] for m in ms} == {"measurement"} and {m["run"] for m in ms} == {1}
    assert [m["value"] for m in ms if m["metric"] == "busbw" and m["params"]["bytes"] == 8589934592
            and m["params"]["placement"] == "in"] == [315.84]
    rc, out, _ = cli(capsys, "results", "export", "2", "--csv", "--db", any_db)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == n2 and {r["benchmark"] for r in rows} == {"all_reduce"}
    assert {r["status"] for r in rows} == {"complete"}   # a failed run's rows say so

    rc, _, _ = cli(capsys, "results", "tag", "2", "node=gpu-07", "seed=none", "--db", any_db)
    assert rc == 0
    with Store.open(any_db) as s:
        assert s.get_run(2).tags == {"node": "gpu-07", "seed": "none"}
    rc, out, _ = cli(capsys, "results", "delete", "1", "--db", any_db)
    assert rc == 0 and out == "deleted run 1\n"
    rc, _, err = cli(capsys, "results", "show", "1", "--db", any_db)
    assert rc == 2 and err == f"clusterbench: error: no run 1 in {any_db}\n"
    with Store.open(any_db) as s:
        assert s.measurement_counts() == {2: n2} and [r.id for r in s.list_runs()] == [2]


def _laptop(path, runs):
    with Store.open(path) as s:
        for i in range(runs):
            s.save_run(Run(benchmark="coll", hosts=["laptop"], tags={"i": str(i), "env": "home"},
                           meta={"notes": [f"run {i}"]}),
                       [Measurement("all_reduce", "busbw", 1.5 + j, "GB/s", {"bytes": 8 << j}) for j in range(5)],
                       [TelemetrySample(0.5 * j, "power", 100.0 + j, "W", "laptop", "0") for j in range(3)])


def _contents(db):
    """Everything stored, by uid, without the database's own ids."""
    with Store.open(db) as s:
        uids = {rid: uid for uid, rid in s.uids().items()}
        return {uids[r.id]: (r.benchmark, r.tags, r.meta, r.hosts, r.started_at,
                             [m.to_dict() for m in s.measurements(r.id)], s.telemetry(r.id))
                for r in s.list_runs()}


def test_copy_is_idempotent_in_both_directions(capsys, any_db, tmp_path, monkeypatch):
    laptop = tmp_path / "laptop.db"
    _laptop(laptop, 3)
    cli(capsys, "import", ALLTOALL, "--db", any_db)   # the team database has a run of its own

    rc, out, err = cli(capsys, "results", "copy", "--from", laptop, "--to", any_db)
    assert rc == 0, err
    assert out.splitlines() == [
        "run 1: copied as run 2 (coll, 5 measurements)",
        "run 2: copied as run 3 (coll, 5 measurements)",
        "run 3: copied as run 4 (coll, 5 measurements)",
        f"copied 3 run(s) (15 measurements), skipped 0 already present: {laptop} -> {any_db}",
    ]
    rc, out, _ = cli(capsys, "results", "copy", "--from", laptop, "--to", any_db, "--json")
    summary = json.loads(out)
    assert rc == 0 and len(out.splitlines()) == 1
    assert {k: summary[k] for k in ("kind", "copied", "skipped", "measurements", "from", "to")} == {
        "kind": "summary", "copied": 0, "skipped": 3, "measurements": 0, "from": str(laptop), "to": any_db}
    assert [(r["from"], r["to"], r["copied"]) for r in summary["runs"]] == [(1, 2, False), (2, 3, False), (3, 4, False)]

    _laptop(laptop, 1)  # one more run on the laptop: only that one goes
    rc, out, _ = cli(capsys, "results", "copy", "--from", laptop, "--to", any_db)
    assert out.splitlines()[-1].startswith("copied 1 run(s) (5 measurements), skipped 3 already present")
    with Store.open(any_db) as s:
        assert len(s.list_runs()) == 5 and sum(s.measurement_counts().values()) == 206 + 20

    back = tmp_path / "back.db"   # and the other way: the team database into a fresh file
    monkeypatch.setenv("CLUSTERBENCH_DB", str(back))   # --to defaults to it
    rc, out, _ = cli(capsys, "results", "copy", "--from", any_db, "--json")
    assert json.loads(out)["copied"] == 5
    assert _contents(back) == _contents(any_db)
    assert set(_contents(laptop)) <= set(_contents(back))


def test_copy_refuses_a_missing_source_and_other_schemes(capsys, tmp_path):
    rc, out, err = cli(capsys, "results", "copy", "--from", tmp_path / "none.db", "--to", tmp_path / "to.db")
    assert rc == 2 and out == "" and err == f"clusterbench: error: no results database at {tmp_path / 'none.db'}\n"
    assert not (tmp_path / "none.db").exists()
    rc, _, err = cli(capsys, "results", "copy", "--from", tmp_path / "to.db", "--to", "mongodb://h/db")
    assert rc == 2 and len(err.splitlines()) == 1 and "postgresql://" in err


# -- PostgreSQL: authentication and errors ------------------------------------------------

def _passfile(path: Path, server, password: str) -> Path:
    path.write_text(f"# host:port:database:user:password\n127.0.0.1:{server.port}:*:cbpw:{password}\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def cbpw_db(pg_server):
    """A database owned by the role that must authenticate with a password."""
    name = pg_server.create_db(owner="cbpw")
    yield pg_server.url(name, user="cbpw")
    pg_server.drop_db(name)


def test_passfile_authenticates(capsys, pg_server, cbpw_db, tmp_path, monkeypatch):
    for var in ("PGPASSFILE", "PGPASSWORD"):  # set, then delete: monkeypatch restores both at the end,
        monkeypatch.setenv(var, "")             # also what --db-passfile sets in os.environ
        monkeypatch.delenv(var)
    host_db = re.sub(r"^postgresql://cbpw@", "", cbpw_db)
    rc, out, err = cli(capsys, "import", ALLTOALL, "--db", cbpw_db)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"clusterbench: error: cannot connect to results database {cbpw_db}: ")
    assert "no password supplied" in err and "--db-passfile" in err

    wrong = _passfile(tmp_path / "wrong", pg_server, "not-it")
    rc, _, err = cli(capsys, "results", "list", "--db", cbpw_db, "--db-passfile", wrong)
    assert rc == 2 and len(err.splitlines()) == 1 and host_db in err
    assert 'password authentication failed for user "cbpw"' in err and "not-it" not in err

    loose = _passfile(tmp_path / "loose", pg_server, pg_server.password)
    loose.chmod(0o644)
    rc, _, err = cli(capsys, "results", "list", "--db", cbpw_db, "--db-passfile", loose)
    assert rc == 2 and "chmod 600" in err

    good = _passfile(tmp_path / "good", pg_server, pg_server.password)
    rc, out, err = cli(capsys, "import", ALLTOALL, "--db", cbpw_db, "--db-passfile", good)
    assert rc == 0 and "run 1:" in out, err
    # libpq's own variables work too, through a separate process that has only them
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for extra in ({"PGPASSFILE": str(good)}, {"PGPASSWORD": pg_server.password}):
        r = subprocess.run([sys.executable, "-m", "clusterbench", "results", "list", "--json", "--db", cbpw_db],
                           capture_output=True, text=True, timeout=60, env={**env, **extra})
        assert r.returncode == 0 and json.loads(r.stdout)["measurements"] == 206, r.stderr


def test_connection_errors_are_one_line_naming_host_and_database(capsys, pg_server):
    cases = {
        f"postgresql://postgres@127.0.0.1:{pg_server.port}/no_such_db": 'database "no_such_db" does not exist',
        "postgresql://postgres:hunter2@127.0.0.1:1/cb": "Connection refused",
        f"postgresql://nobody@127.0.0.1:{pg_server.port}/postgres": 'role "nobody" does not exist',
    }
    for url, why in cases.items():
        rc, out, err = cli(capsys, "results", "list", "--db", url)
        shown = url.replace(":hunter2", "")
        assert rc == 2 and out == "", err
        lines = [x for x in err.splitlines() if "warning:" not in x]
        assert len(lines) == 1 and lines[0].startswith(f"clusterbench: error: cannot connect to results database {shown}: ")
        assert why in lines[0] and "hunter2" not in err and "Traceback" not in err


def test_tls_options_reach_libpq(capsys, pg_server):
    """Query parameters go to libpq as they are: the test server has no TLS, so requiring it fails
    there, with libpq's reason in one line; sslmode=disable works."""
    name = pg_server.create_db()
    try:
        base = pg_server.url(name)
        rc, _, err = cli(capsys, "results", "list", "--db", f"{base}?sslmode=require")
        assert rc == 2 and "server does not support SSL" in err and len(err.splitlines()) == 1
        rc, _, err = cli(capsys, "results", "list", "--db", f"{base}?sslmode=disable&application_name=cbtest")
        assert rc == 0, err
    finally:
        pg_server.drop_db(name)


def test_launched_ranks_get_the_database_without_its_password(capsys, tmp_path, monkeypatch):
    """`launch` hands --db to every rank's command line (an sbatch script, mpirun's argv): a URL
    goes without its password (ranks authenticate with a passfile), a path goes absolute."""
    rc, script, err = cli(capsys, "launch", "slurm", "--nodes", "2", "--print", "--db",
                          "postgresql://cb:hunter2@db1:5432/cb?sslmode=require", "--", "coll", "all_reduce")
    assert rc == 0, err
    assert "--db postgresql://cb@db1:5432/cb?sslmode=require" in script.replace("'", "")
    assert "hunter2" not in script
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts").write_text("localhost slots=1\n")
    rc, line, err = cli(capsys, "launch", "mpi", "--hostfile", "hosts", "--print", "--db", "rel.db",
                        "--", "coll", "all_reduce")
    assert rc == 0 and f"--db {tmp_path / 'rel.db'}" in line, err
