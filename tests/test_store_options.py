"""Option values the store cannot take are refused in one line, exit 2: a ``--limit`` past what
a database integer holds, an empty ``--db`` or ``CLUSTERBENCH_DB`` (never the default file
instead), an empty ``--benchmark`` (as the selector ``bench:`` is), and a ``--profile`` that is
a directory is named as one."""

from __future__ import annotations

import pytest

from clusterbench.cli import main
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture
def stored(tmp_path):
    db = tmp_path / "r.db"
    with Store.open(db) as s:
        for bench in ("all_reduce", "stream"):
            s.save_run(Run(benchmark="x", hosts=["n1"]), [Measurement(bench, "busbw", 1.0, "GB/s", {"bytes": 8})])
    return str(db)


def _one_line_usage_error(rc, out, err, *words):
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, (rc, out, err)
    assert err.startswith("clusterbench: error: ") and "Traceback" not in err and "internal error" not in err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("limit", ["9223372036854775808", str(10**30)])
def test_limit_past_a_database_integer_is_a_usage_error(capsys, stored, limit):
    _one_line_usage_error(*cli(capsys, "results", "list", "--limit", limit, "--db", stored), "--limit")


def test_the_largest_limit_lists_every_run(capsys, stored):
    rc, out, err = cli(capsys, "results", "list", "--limit", str(2**63 - 1), "--db", stored)
    assert rc == 0 and len(out.splitlines()) == 3, err


@pytest.fixture
def home(tmp_path, monkeypatch):
    """Where the default database would be: it must stay empty."""
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("CLUSTERBENCH_DB", raising=False)
    return data


@pytest.mark.parametrize("argv", [("results", "list"), ("results", "show", "1"), ("stream", "--device", "cpu")])
def test_an_empty_db_option_is_a_usage_error(capsys, home, argv):
    _one_line_usage_error(*cli(capsys, *argv, "--db", ""), "--db", "empty")
    assert not home.exists()


def test_an_empty_clusterbench_db_is_a_usage_error(capsys, home, monkeypatch):
    monkeypatch.setenv("CLUSTERBENCH_DB", "")
    _one_line_usage_error(*cli(capsys, "results", "list"), "CLUSTERBENCH_DB", "empty")
    assert not home.exists()


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_benchmark_filter_is_refused_as_the_selector_is(capsys, stored, name):
    _one_line_usage_error(*cli(capsys, "results", "list", "--benchmark", name, "--db", stored), "empty benchmark name")
    _one_line_usage_error(*cli(capsys, "results", "show", f"bench:{name}", "--db", stored), "empty benchmark name")


@pytest.mark.parametrize("argv", [("report", "1", "-o", "{tmp}/r.html"), ("export", "openmetrics"),
                                  ("validate", "1")])
def test_a_profile_that_is_a_directory_is_named_as_one(capsys, stored, tmp_path, argv):
    profile = tmp_path / "profiles"
    profile.mkdir()
    argv = [a.format(tmp=tmp_path) for a in argv]
    rc, out, err = cli(capsys, *argv, "--profile", profile, "--db", stored)
    _one_line_usage_error(rc, out, err)
    assert err == f"clusterbench: error: profile file {profile} is a directory\n"
    assert not (tmp_path / "r.html").exists()
