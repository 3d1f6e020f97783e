"""Probed edges of ``clusterbench run`` (the default suite's per-step outcome and its summary)
and ``clusterbench transfer`` (config language digits, a config whose every test is skipped,
config tests named like a matrix or like each other). Small sizes, no timings asserted."""

from __future__ import annotations

import os

import pytest
import torch.distributed as dist

from clusterbench.bench import suite
from clusterbench.bench.suite import SuiteEntry
from clusterbench.bench.transfer import engine, lang
from clusterbench.bench.transfer import main as tmain
from clusterbench.bench.transfer.config import build_plan
from clusterbench.bench.transfer.matrices import Planned
from clusterbench.cli import main
from clusterbench.errors import UsageError
from clusterbench.families.transfer.table import TransferTable
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Measurement, Meta, Note

CPU = engine.Topology(0, (0,), {0: (0,)})
SUITE_META = "suite"   # run.meta key of the steps (suite.SUITE_META)


# ---- per-rank steps for the suite (imported by the ranks by module path) ----

def step_ok(ctx, config):
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {"step": "ok"})])
    ctx.progress()


def step_skips(ctx, config):
    ctx.record([Measurement("selftest", "value", 2.0, "", {"step": "skips"})])
    ctx.note("skipped tf32 on cpu: tf32 is a GPU tensor-core mode", "selftest")


def step_fails(ctx, config):
    ctx.fail("wrong result in the second step")


def step_dies(ctx, config):
    dist.barrier()
    if ctx.rank == 1:
        os._exit(9)
    dist.barrier()


def _suite(entries):
    events = []
    outcome = execute(Job(suite.main, entries, RankOptions(device="cpu", timeout=60), np=2), events.append)
    metas = [e.data[SUITE_META] for e in events if isinstance(e, Meta) and SUITE_META in e.data]
    notes = [e for e in events if isinstance(e, Note) and e.benchmark == SUITE_META]
    return outcome, metas, notes


def test_suite_says_each_steps_outcome_failed_skipped_and_not_run():
    outcome, metas, notes = _suite([SuiteEntry("first", step_ok, cpu=None),
                                    SuiteEntry("second", step_fails, cpu=None),
                                    SuiteEntry("third", step_skips, cpu=None)])
    assert outcome.status == "complete"   # (the run builder turns the Failure into failed)
    last = {s["step"]: s for s in metas[-1]}
    assert [last[n]["status"] for n in ("first", "second", "third")] == ["done", "failed", "done"]
    assert last["second"]["failures"] == ["wrong result in the second step"]
    assert last["third"]["skipped"] == ["skipped tf32 on cpu: tf32 is a GPU tensor-core mode"]
    # the summary at the end names every step with why
    assert len(notes) == 1
    text = notes[0].text
    assert "first: done" in text and "second: failed (wrong result in the second step)" in text
    assert "third: done" in text and "tf32 is a GPU tensor-core mode" in text


def test_a_dead_rank_leaves_the_step_it_stopped_in_and_the_steps_never_run():
    outcome, metas, notes = _suite([SuiteEntry("first", step_ok, cpu=None),
                                    SuiteEntry("second", step_dies, cpu=None),
                                    SuiteEntry("third", step_ok, cpu=None)])
    assert outcome.status == "incomplete"
    last = {s["step"]: s["status"] for s in metas[-1]}
    assert last == {"first": "done", "second": "started", "third": "not run"}
    assert notes == []   # no summary claims the suite finished


def test_run_json_carries_the_suite_steps(tmp_path, capsys, monkeypatch):
    import json

    monkeypatch.setattr(suite, "SUITE", [SuiteEntry("first", step_ok, cpu=None),
                                         SuiteEntry("third", step_skips, cpu=None)])
    with pytest.raises(SystemExit) as exc:
        main(["run", "--no-preflight", "--np", "2", "--json", "-q", "--db", str(tmp_path / "r.db")])
    out = capsys.readouterr().out

    def refuse(constant):
        raise ValueError(constant)

    lines = [json.loads(line, parse_constant=refuse) for line in out.splitlines()]
    assert exc.value.code == 0 and all("kind" in line for line in lines)
    run = next(line for line in lines if line["kind"] == "run")
    assert [s["status"] for s in run["meta"][SUITE_META]] == ["done", "done"]
    assert any(n["benchmark"] == SUITE_META for n in run["meta"]["notes"])


# ---- transfer ----

@pytest.mark.parametrize("text", ["1 \u00b2 (C0->C0->C0)", "-1 (C0 C0 C0 \u00b2 1K)", "C\u0663->C0@1K",
                                  "1 4 (C0->C\u0661->C0)"])
def test_digits_other_than_ascii_are_one_usage_error(text):
    # "²" passed str.isdigit and then int() raised (internal error); "٣" read as NUMA node 3
    with pytest.raises(UsageError):
        lang.parse_text(text, 4096)


def test_a_config_whose_every_test_is_skipped_runs_nothing_else(tmp_path):
    cfg = tmp_path / "gpu.cfg"
    cfg.write_text("G0->G1@4K\n1 1 (C0->D0->C0)\n")
    notes: list[str] = []
    # before: the h2h matrix ran instead of the tests asked for, exit 0
    with pytest.raises(UsageError, match="nothing to run: skipped .*GPU 0 does not exist.*1 more"):
        build_plan(None, (), str(cfg), 4096, "copy_engine", CPU, notes)
    # a matrix asked for beside it still runs
    planned = build_plan("h2h", (), str(cfg), 4096, "copy_engine", CPU, [])
    assert [p.kind for p in planned] == ["h2h"]


def test_an_empty_config_names_the_file(tmp_path):
    cfg = tmp_path / "comments.cfg"
    cfg.write_text("# only\r\n# comments\r\n")
    with pytest.raises(UsageError, match="comments.cfg: no transfer tests found"):
        build_plan(None, (), str(cfg), 4096, "copy_engine", CPU, [])


def _config_rows(text: str) -> list[Measurement]:
    rows: list[Measurement] = []

    class Ctx:
        device_type = "cpu"

        def meta(self, data): pass
        def note(self, text, benchmark=None): pass
        def fail(self, reason): raise AssertionError(reason)
        def progress(self): pass
        def record(self, ms): rows.extend(ms)

    tests = lang.parse_text(text, 4096)
    cfg = tmain.TransferConfig(tuple(Planned(t, "config", "uni", "CPU", "", i) for i, t in enumerate(tests, 1)), 1, 0)
    tmain.main(Ctx(), cfg)
    return rows


def test_config_tests_named_like_a_matrix_or_alike_stay_apart():
    rows = _config_rows("# h2h\nC0->C0@4K C0->C0@4K\n\n# same\nC0->N@4K\n\n# same\nC0->N@4K\n")
    pairs = [m for m in rows if m.param("stat") == "pair"]
    # two tests named alike: their rows differ by test_index (they were the same row twice)
    keys = [tuple(sorted(m.params.items())) for m in rows]
    assert len(set(keys)) == len(keys)
    assert sorted({m.param("test_index") for m in rows}) == [1, 2, 3]
    # a config test named h2h prints as its two transfers, not as an h2h matrix with one cell
    lines = TransferTable().rows([m for m in rows if m.param("test") == "h2h"])
    assert sum(line.lstrip().startswith("Transfer") for line in lines) == 2
    assert not any("SRC->DST" in line for line in lines)
    assert len([m for m in pairs if m.param("test") == "h2h"]) == 2


def test_transfer_json_bandwidth_is_bytes_over_time_and_the_table_shows_it(tmp_path, capsys):
    import json

    with pytest.raises(SystemExit) as exc:
        main(["transfer", "--test", "C0->C0@8K", "--iterations", "2", "--warmups", "0", "--json", "-q",
              "--db", str(tmp_path / "t.db")])
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines()]
    assert exc.value.code == 0
    bw = [line for line in lines if line["kind"] == "measurement" and line["params"]["stat"] == "pair"]
    assert len(bw) == 1 and bw[0]["unit"] == "GB/s" and bw[0]["params"]["bytes"] == 8192
    assert bw[0]["params"]["test_index"] == 1 and bw[0]["value"] > 0
