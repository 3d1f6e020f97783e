"""Where ``--db`` points: paths, sqlite:// and postgresql:// URLs, refused schemes, password
stripping; and SQLite on shared file systems (rollback journal there, WAL elsewhere)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.errors import UsageError
from clusterbench.store import Store, describe, fstype, warn
from clusterbench.store.location import (
    POSTGRESQL,
    SQLITE,
    for_other_hosts,
    parse,
    redact,
    strip_password,
)


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


# -- locations ----------------------------------------------------------------------------

def test_paths_and_sqlite_urls_are_files(tmp_path, monkeypatch):
    assert parse(str(tmp_path / "r.db")).path == tmp_path / "r.db"
    assert parse(tmp_path / "r.db").kind == SQLITE
    assert parse("sqlite:///srv/cb/results.db").path == Path("/srv/cb/results.db")
    assert parse("sqlite:///srv/my%20results.db").path == Path("/srv/my results.db")
    assert parse("weird:name.db").kind == SQLITE  # a colon without // is a file name
    monkeypatch.setenv("CLUSTERBENCH_DB", "postgresql://cb@db1/cb")
    assert parse(None).kind == POSTGRESQL and describe(None) == "postgresql://cb@db1/cb"
    monkeypatch.delenv("CLUSTERBENCH_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert parse(None).path == tmp_path / "clusterbench" / "results.db"


@pytest.mark.parametrize("url", ["postgresql://cb@db1:5432/cb", "postgres://cb@db1/cb",
                                 "POSTGRESQL://cb@db1/cb", "postgresql://cb@db1,db2:5433/cb?sslmode=verify-full"])
def test_postgres_urls(url):
    where = parse(url)
    assert where.kind == POSTGRESQL and where.url == url and where.display == url and not where.has_password


@pytest.mark.parametrize("url", ["mysql://u@h/db", "http://h/x", "file:///tmp/x.db", "sqlite://host/x.db"])
def test_other_schemes_are_refused_in_one_line(url):
    with pytest.raises(UsageError) as e:
        parse(url)
    assert "\n" not in str(e.value)
    if not url.startswith("sqlite"):
        assert "postgresql://" in str(e.value) and "sqlite:///" in str(e.value)


def test_a_url_never_becomes_a_directory(capsys, tmp_path, monkeypatch):
    """Before: `--db postgresql://...` created ./postgresql:/... as an SQLite file."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = cli(capsys, "results", "list", "--db", "mysql://cb@127.0.0.1:1/cb")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "postgresql://" in err and "sqlite:///" in err
    rc, _, err = cli(capsys, "results", "list", "--db", "postgresql://cb@127.0.0.1:1/cb")
    assert rc == 2 and err.startswith("clusterbench: error: cannot connect to results database "
                                      "postgresql://cb@127.0.0.1:1/cb: ")
    assert list(tmp_path.iterdir()) == []


def test_sqlite_url_works_end_to_end(capsys, tmp_path):
    rc, _, err = cli(capsys, "import", str(Path(__file__).parent / "data" / "nccl-tests" /
                                         "superbench-nccl_alltoall.log"), "--db", f"sqlite://{tmp_path}/u.db")
    assert rc == 0, err
    with Store.open(tmp_path / "u.db", create=False) as s:
        assert len(s.list_runs()) == 1


@pytest.mark.parametrize("url,clean", [
    ("postgresql://cb:s3cret@db1:5432/cb", "postgresql://cb@db1:5432/cb"),
    ("postgres://cb:p%40ss@db1/cb?sslmode=require", "postgres://cb@db1/cb?sslmode=require"),
    ("postgresql://cb@db1/cb?password=s3cret&sslmode=require&sslrootcert=/etc/ca.pem",
     "postgresql://cb@db1/cb?sslmode=require&sslrootcert=/etc/ca.pem"),
    ("postgresql://cb@db1/cb", "postgresql://cb@db1/cb"),
])
def test_password_stripping(url, clean):
    assert strip_password(url) == clean
    where = parse(url)
    assert where.display == clean and where.url == url and where.has_password == (url != clean)
    assert redact(f"--db={url} and more") == f"--db={clean} and more"


def test_ranks_on_other_hosts_get_no_password(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert for_other_hosts("postgresql://cb:s3cret@db1/cb") == "postgresql://cb@db1/cb"
    assert for_other_hosts("rel.db") == str(tmp_path / "rel.db")
    assert for_other_hosts(None) is None


def test_password_in_url_warns_once_and_is_never_stored_or_printed(capsys, pg_server):
    warn.forget()
    name = pg_server.create_db(owner="cbpw")
    try:
        url = pg_server.url(name, user=f"cbpw:{pg_server.password}")
        rc, out, err = cli(capsys, "import", str(Path(__file__).parent / "data" / "nccl-tests" /
                                                 "superbench-nccl_alltoall.log"), "--db", url)
        assert rc == 0, err
        assert err.count("warning: the database URL holds a password") == 1
        rc, out, err = cli(capsys, "results", "export", "1", "--run-info", "--db", url)
        assert rc == 0 and pg_server.password not in out + err
        assert pg_server.password not in str(pg_server.sql("SELECT command, meta FROM runs", db=name))
    finally:
        pg_server.drop_db(name)


# -- shared file systems ------------------------------------------------------------------

MOUNTINFO = """\
22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /shared rw,relatime shared:20 - nfs4 fs1:/export rw,vers=4.2
41 22 0:36 / /lustre rw - lustre 10.0.0.1@o2ib:/lfs rw
42 22 0:37 / /gpfs/fs1 rw - gpfs fs1 rw
43 22 0:38 / /mnt/beegfs rw - beegfs beegfs_nodev rw
44 22 0:39 / /mnt/win rw - cifs //srv/share rw
45 40 0:40 / /shared/local rw - tmpfs tmpfs rw
46 22 0:41 / /mnt/with\\040space rw - nfs fs2:/x rw
"""


def _no_statfs(path):
    raise OSError(38, "Function not implemented")


@pytest.mark.parametrize("path,expected", [
    ("/shared/cb/results.db", "nfs"), ("/lustre/u/r.db", "lustre"), ("/gpfs/fs1/r.db", "gpfs"),
    ("/mnt/beegfs/r.db", "beegfs"), ("/mnt/win/r.db", "cifs"), ("/mnt/with space/r.db", "nfs"),
    ("/shared/local/r.db", None), ("/home/u/r.db", None), ("/sharedx/r.db", None),
])
def test_shared_fs_from_mountinfo(path, expected):
    assert fstype.shared_fs(path, statfs=_no_statfs, mountinfo=MOUNTINFO) == expected


@pytest.mark.parametrize("magic,expected", [
    (0x6969, "nfs"), (0x0BD00BD0, "lustre"), (0x47504653, "gpfs"), (0x19830326, "beegfs"),
    (0xFF534D42, "cifs"), (0xFE534D42, "smb2"), (0xEF53, None), (0x01021994, None),
])
def test_shared_fs_from_statfs(magic, expected, tmp_path):
    # statfs answers first; mountinfo (claiming nfs everywhere) is not consulted
    assert fstype.shared_fs(tmp_path / "new" / "r.db", statfs=lambda p: magic,
                            mountinfo="1 0 0:1 / / rw - nfs x rw") == expected


def test_real_statfs_here(tmp_path):
    assert fstype.statfs_magic(str(tmp_path)) > 0
    assert fstype.shared_fs(tmp_path / "r.db") is None  # tests do not run on a network fs


@pytest.mark.parametrize("magic,mode", [(0x6969, "delete"), (0x0BD00BD0, "delete"), (0x47504653, "delete"),
                                        (0x19830326, "delete"), (0xFF534D42, "delete"), (0xEF53, "wal")])
def test_journal_mode_follows_the_file_system(magic, mode, tmp_path, monkeypatch, capsys):
    warn.forget()
    monkeypatch.setattr(fstype, "statfs_magic", lambda path: magic)
    db = tmp_path / "r.db"
    for _ in range(2):
        Store.open(db).close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == mode
    con.close()
    err = capsys.readouterr().err
    if mode == "delete":
        assert err.count("clusterbench: warning:") == 1  # once, however often the store opens
        assert "not WAL" in err and "PostgreSQL" in err and str(db) in err
    else:
        assert err == ""


def test_a_wal_database_moved_to_nfs_leaves_wal(tmp_path, monkeypatch):
    db = tmp_path / "r.db"
    Store.open(db).close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    monkeypatch.setattr(fstype, "statfs_magic", lambda path: 0x6969)
    with Store.open(db) as s:
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
