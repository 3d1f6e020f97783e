"""``results list/show/delete/tag/copy`` as an operator of a shared results database uses them:
a delete or a tag of several runs is all or nothing, and neither it nor a copy stops halfway
because standard output failed; a copied import is still known as imported; a tag that would
make a run unreadable (``link_speed=garbage``) is refused; a run survives SQLite -> PostgreSQL
-> SQLite unchanged."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.output import OUTPUT_FAILED
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import Store

NCCL_LOG = Path(__file__).parent / "data" / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def cli(capsys, *argv: object) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def cli_to_full_disk(*argv: object) -> subprocess.CompletedProcess[str]:
    """The command in its own process, its standard output a full disk (``> /dev/full``)."""
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(os.devnull if not os.path.exists("/dev/full") else "/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, argv)], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=120)


def _runs(db: str, n: int, tags: dict[str, str] | None = None) -> list[int]:
    with Store.open(db) as s:
        return [s.save_run(Run(benchmark="coll", hosts=["n1"], tags=dict(tags or {})),
                           [Measurement("all_reduce", "busbw", float(i + 1), "GB/s", {"bytes": 8 << i})],
                           [TelemetrySample(0.5, "gpu_util", 90.0, "%", "n1", "0")])
                for i in range(n)]


def _ids(db: str) -> list[int]:
    with Store.open(db) as s:
        return sorted(int(r.id or 0) for r in s.list_runs())


# -- delete ----------------------------------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_delete_with_a_full_output_still_deletes_every_run_it_selected(db):
    _runs(db, 5)
    r = cli_to_full_disk("results", "delete", "1..5", "--db", db)
    assert r.returncode == OUTPUT_FAILED, r.stderr
    assert r.stderr.startswith("clusterbench: error: cannot write to standard output") and len(r.stderr.splitlines()) == 1
    assert _ids(db) == []


def test_delete_of_several_runs_is_all_or_nothing(capsys, db):
    _runs(db, 5)
    conn = sqlite3.connect(db)   # a run that cannot be deleted (as a lock or a full disk would fail it)
    conn.execute("CREATE TRIGGER keep3 BEFORE DELETE ON runs WHEN old.id = 3 BEGIN SELECT RAISE(ABORT, 'kept'); END")
    conn.commit()
    conn.close()
    rc, out, err = cli(capsys, "results", "delete", "1..5", "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and "kept" in err, err
    assert out == ""   # nothing said deleted: nothing was
    assert _ids(db) == [1, 2, 3, 4, 5]


def test_delete_prints_each_run_once_it_is_gone(capsys, any_db):
    _runs(any_db, 4)
    rc, out, err = cli(capsys, "results", "delete", "2..3", "4", "--db", any_db)
    assert (rc, err) == (0, "")
    assert out == "deleted run 2\ndeleted run 3\ndeleted run 4\n"
    assert _ids(any_db) == [1]


# -- tag -------------------------------------------------------------------------------------------

def test_tag_of_several_runs_is_all_or_nothing(capsys, db):
    _runs(db, 5)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TRIGGER no3 BEFORE INSERT ON run_tags WHEN new.run_id = 3 "
                 "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    conn.commit()
    conn.close()
    rc, _, err = cli(capsys, "results", "tag", "1..5", "env=prod", "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and "refused" in err, err
    with Store.open(db) as s:
        assert [r.tags for r in s.list_runs()] == [{}] * 5


@pytest.mark.parametrize("value", ["garbage", "100", "-5Gbps", "0Gbps", "nan"])
def test_tag_refuses_a_link_speed_no_judge_can_read(capsys, db, value):
    _runs(db, 1)
    rc, out, err = cli(capsys, "results", "tag", "1", f"link_speed={value}", "--db", db)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "link_speed" in err
    with Store.open(db) as s:
        assert s.get_run(1).tags == {}
    rc, out, err = cli(capsys, "results", "show", "1", "--db", db)   # the run still reads
    assert rc == 0 and "# run 1" in out, err


def test_tag_keeps_a_readable_link_speed_and_overwrites_a_tag(capsys, db):
    _runs(db, 2, {"env": "a"})
    rc, _, err = cli(capsys, "results", "tag", "1..2", "link_speed=100Gbps", "env=b", "note=a=b", "--db", db)
    assert (rc, err) == (0, "")
    with Store.open(db) as s:
        assert [r.tags for r in s.list_runs(oldest_first=True)] == \
            [{"env": "b", "link_speed": "100Gbps", "note": "a=b"}] * 2
    rc, out, err = cli(capsys, "results", "show", "1", "--db", db)
    assert rc == 0 and "# tags: env=b, link_speed=100Gbps, note=a=b" in out, err


# -- copy ------------------------------------------------------------------------------------------

def test_a_copied_import_is_still_known_as_imported(capsys, tmp_path, any_db):
    laptop = str(tmp_path / "laptop.db")
    rc, _, err = cli(capsys, "import", NCCL_LOG, "--tag", "site=a", "--db", laptop)
    assert rc == 0, err
    rc, _, err = cli(capsys, "results", "copy", "--from", laptop, "--to", any_db)
    assert rc == 0, err
    # the same log imported into the team database again is the run it holds, not a second one
    rc, out, err = cli(capsys, "import", NCCL_LOG, "--tag", "site=a", "--db", any_db)
    assert rc == 0 and "already imported as run(s) 1" in out, (out, err)
    assert _ids(any_db) == [1]
    # and the identity travels on: back into a new file, still one run
    back = str(tmp_path / "back.db")
    rc, _, err = cli(capsys, "results", "copy", "--from", any_db, "--to", back)
    assert rc == 0, err
    rc, out, err = cli(capsys, "import", NCCL_LOG, "--tag", "site=a", "--db", back)
    assert rc == 0 and "already imported" in out, (out, err)
    assert _ids(back) == [1]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_copy_with_a_full_output_still_copies_every_run(tmp_path):
    src, dest = str(tmp_path / "src.db"), str(tmp_path / "dest.db")
    _runs(src, 5)
    r = cli_to_full_disk("results", "copy", "--from", src, "--to", dest)
    assert r.returncode == OUTPUT_FAILED, r.stderr
    assert r.stderr.startswith("clusterbench: error: cannot write to standard output") and len(r.stderr.splitlines()) == 1
    assert _ids(dest) == [1, 2, 3, 4, 5]


def _show(capsys, db: str, *args: str) -> str:
    rc, out, err = cli(capsys, "results", "show", *args, "--db", db)
    assert rc == 0, err
    return out


def test_sqlite_postgresql_sqlite_round_trip_shows_every_run_byte_for_byte(capsys, tmp_path, pg_server):
    first, back = str(tmp_path / "first.db"), str(tmp_path / "back.db")
    _runs(first, 2, {"team": "a,b", "k": " v "})
    rc, _, err = cli(capsys, "import", NCCL_LOG, "--db", first)
    assert rc == 0, err
    with Store.open(first) as s:   # a failed run, its errors shown by results show
        s.save_run(Run(benchmark="coll", status="failed", errors=["rank 1 died"]), [])
    name = pg_server.create_db()
    try:
        url = pg_server.url(name)
        for frm, to in ((first, url), (url, back)):
            rc, out, err = cli(capsys, "results", "copy", "--from", frm, "--to", to)
            assert rc == 0 and "copied 4 run(s)" in out, err
        for sel in ("1", "2", "3", "4", "1..4", "last", 'team="a,b"'):
            shown = _show(capsys, first, sel)
            assert _show(capsys, url, sel) == shown == _show(capsys, back, sel)
            shown = _show(capsys, first, sel, "--json")
            assert _show(capsys, url, sel, "--json") == shown == _show(capsys, back, sel, "--json")
        rc, listed, _ = cli(capsys, "results", "list", "--db", first)
        assert cli(capsys, "results", "list", "--db", back)[1] == listed
        with Store.open(first) as a, Store.open(back) as b:
            assert [a.telemetry(i) for i in (1, 2)] == [b.telemetry(i) for i in (1, 2)] != [[], []]
            assert a.uids() == b.uids()
        # a second round trip stores nothing twice
        rc, out, err = cli(capsys, "results", "copy", "--from", back, "--to", url)
        assert rc == 0 and "copied 0 run(s)" in out and "skipped 4" in out, err
    finally:
        pg_server.drop_db(name)


@pytest.mark.parametrize("argv", [["stream", "-s", "1K", "-n", "2", "--device", "cpu"],
                                  ["import", str(Path(__file__).parent / "data" / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt")]])
def test_a_link_speed_tag_no_judge_can_read_is_refused_before_anything_runs(capsys, db, argv):
    """`--tag link_speed=garbage` stored the run, then its own table failed ("internal error while
    printing", exit 1) and so did every later read of it."""
    rc, out, err = cli(capsys, *argv, "--tag", "link_speed=garbage", "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and "link_speed" in err, err
    with Store.open(db) as s:
        assert s.list_runs() == []
