"""Helpers shared by the workload tests: run the CLI in-process and read the stored run."""

from __future__ import annotations

import json

import pytest
from judge_helpers import cli

from clusterbench.records import Measurement
from clusterbench.store import Store


def json_rows(out: str) -> list[Measurement]:
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [Measurement.from_dict(d) for d in records if d.get("kind") == "measurement"]


def stored(db: str) -> list[tuple[object, list[Measurement]]]:
    with Store.open(db) as store:
        return [(r, store.measurements(r.id)) for r in reversed(store.list_runs())]


def overall(ms: list[Measurement], metric: str, stat: str = "avg", **params: object) -> Measurement:
    found = [m for m in ms if m.metric == metric and "step" not in m.params
             and m.params.get("stat") == stat and all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (metric, stat, params, found)
    return found[0]


def _check(rows, batches):
    for b in batches:
        ms = {(m.metric, m.params["stat"]): m for m in rows if m.params["batch"] == b}
        lat, sps = ms[("latency_ms", "avg")], ms[("samples_per_s", "avg")]
        assert sps.value * lat.value / 1e3 == pytest.approx(b)
        assert ms[("latency_ms", "min")].value <= lat.value


SHAPE = {"model": "custom", "strategy": "full", "dtype": "fp32", "batch": 8, "seq": 16, "layers": 3,
         "hidden": 64, "ranks": 2}


def _live_matches_results_show(capsys: pytest.CaptureFixture[str], db: str, live: str) -> None:
    code, shown, err = cli(capsys, "results", "show", "last", "--db", db)
    assert code == 0, err
    # results show adds the run's id, times, command and tags above the table; live adds "stored"
    assert [line for line in live.splitlines() if not line.startswith("# run ")] == [
        line for line in shown.splitlines() if not line.startswith(("# run ", "# source: ", "# tags: "))]
