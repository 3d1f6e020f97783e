"""Tests of clusterbench.cli.commands.run: ``clusterbench run``."""


from bench_cli import _cli

from clusterbench.preflight import checks as c


def test_run_command_records_preflight(monkeypatch, capsys):
    """``clusterbench run`` runs the preflight first and hands its outcome to the stored run."""
    import clusterbench.cli.commands.run as run_cmd

    seen = []
    monkeypatch.setattr(run_cmd, "run_benchmark_command", lambda job, name, out, meta, closing=None: seen.append(meta) or 0)
    code, _, err = _cli(["run", "--db", "unused.db"], capsys)
    assert code == 0 and seen[0]["preflight"]["status"] in c.STATUSES
    assert "# preflight on " in err
    code, _, err = _cli(["run", "--no-preflight", "--db", "unused.db"], capsys)
    assert code == 0 and seen[1] is None and "preflight" not in err


def test_run_says_a_half_launcher_environment_once(monkeypatch, capsys, db):
    from judge_helpers import cli

    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    rc, out, err = cli(capsys, "run", "--db", db)
    assert rc == 2 and err.count("RANK is set but WORLD_SIZE is not") == 1 and "preflight" not in err, err
