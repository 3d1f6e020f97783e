"""Fixtures the command tests share: databases of stored runs, real and extreme."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil

import pytest
from hostile_text import ESC, EVIL
from judge_helpers import run_cli
from paths import DATA
from seed_logs import SEEDS
from stored_runs import (
    A3,
    BABEL,
    GOLDEN,
    ODD_ERROR,
    ODD_TAGS,
    OSU,
    PERFTEST,
    PKB,
    RCCL,
    STORED,
    VLLM,
    _cli,
    _coll,
    _stream,
)

from clusterbench.judge.select import Row, load_runs, rows_of
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("probe") / "cb.db")
    for f in SEEDS:
        code, _, err = run_cli("import", DATA / f, "--tag", "seed=mi300x", "--db", db)
        assert code == 0, err
    return db


@pytest.fixture(scope="module")
def extreme_db(tmp_path_factory) -> str:
    """Each golden run twice (tags copy=0 and copy=1), its values cycling through EXTREMES."""
    where = tmp_path_factory.mktemp("extreme")
    shutil.copy(GOLDEN, where / "golden.db")
    values = itertools.cycle(STORED)
    path = str(where / "extreme.db")
    with Store.open(str(where / "golden.db")) as src, Store.open(path) as dst:
        for run in sorted(src.list_runs(), key=lambda r: r.id or 0):
            for copy in range(2):
                ms = [dataclasses.replace(m, value=next(values)) for m in src.measurements(run.id)]
                again = dataclasses.replace(run, id=None, tags={**run.tags, "copy": str(copy)})
                dst.save_run(again, ms)
    return path


@pytest.fixture(scope="module")
def probe_db(tmp_path_factory) -> str:
    """Runs stored as a user would: a clusterbench JSON lines file imported."""
    where = tmp_path_factory.mktemp("probe")
    lines: list[str] = []
    for i, v in enumerate((1.7e308, 5e-324)):
        lines += run_lines(Run("coll", hosts=["h1", "h2"], ranks=2, id=2 * i + 1,
                               tags={"x": "coll", "link_speed": "100Gbps"}), _coll(v))
        lines += run_lines(Run("stream", hosts=["h1"], ranks=1, devices=["AMD Instinct MI300X"], id=2 * i + 2,
                               tags={"x": "stream"}), _stream(v))
    for i, (tag, v) in enumerate([("a", 1e-300), ("a", 1.1e-300), ("a", 0.9e-300),
                                  ("b", 1.7e308), ("b", 1.6e308), ("b", 1.65e308)]):
        lines += run_lines(Run("stream", hosts=["h1"], ranks=1, id=10 + i, tags={"cmp": tag}), _stream(v))
    (where / "runs.jsonl").write_text("\n".join(lines) + "\n")
    db = str(where / "probe.db")
    rc, _, err = run_cli("import", where / "runs.jsonl", "--db", db)
    assert rc == 0, err
    return db


@pytest.fixture
def evil_db(tmp_path):
    db = str(tmp_path / "evil.db")
    run = Run(benchmark="all_reduce", hosts=[f"node{ESC}1"], ranks=1, devices=[f"GPU{ESC}"],
              tags={"owner": EVIL}, errors=[f"rank 0: {EVIL}"], status="incomplete",
              versions={"nccl": f"2.{ESC}"},
              meta={"notes": [{"text": f"note {EVIL}", "benchmark": "all_reduce"}],
                    "rank_hosts": [f"node{ESC}1"]})
    params = {"bytes": 8, "count": 2, "dtype": f"float{ESC}", "redop": "sum", "root": -1,
              "placement": "out", "ranks": 1}
    ms = [Measurement("all_reduce", "busbw", 1.0, "GB/s", params),
          Measurement("all_reduce", "time_us", 2.0, "us", params),
          Measurement(f"mystery{ESC}", "value", 3.0, "", {"host": EVIL})]
    with Store.open(db) as store:
        store.save_run(run, ms)
        store.save_run(Run(benchmark="all_reduce", hosts=["plain"], ranks=1), ms)
    return db


@pytest.fixture(scope="module")
def rows_validate_probe(seeded) -> list[Row]:
    with Store.open(seeded) as s:
        return rows_of(load_runs(s, ["seed=mi300x"]))


@pytest.fixture
def stored_store_options(tmp_path):
    db = tmp_path / "r.db"
    with Store.open(db) as s:
        for bench in ("all_reduce", "stream"):
            s.save_run(Run(benchmark="x", hosts=["n1"]), [Measurement(bench, "busbw", 1.0, "GB/s", {"bytes": 8})])
    return str(db)


@pytest.fixture(scope="module")
def agreement_store(tmp_path_factory) -> dict:
    """The same real logs imported as sides A and B (and C), extreme values, hostile tags and a
    failed run: every way of reading them must agree."""
    tmp = tmp_path_factory.mktemp("agree")
    db = str(tmp / "r.db")
    for side in ("A", "B"):
        for i, path in enumerate((RCCL, A3, PKB)):
            rc, _, err = _cli("import", path, "--db", db, "--tag", f"side={side}", "--tag", f"file={i}")
            assert rc == 0, err
    for path in (PERFTEST, BABEL, VLLM, OSU):
        rc, _, err = _cli("import", path, "--db", db, "--tag", "side=C")
        assert rc in (0, 1), err
    params = {"count": 2, "dtype": "float", "redop": "sum", "root": -1, "placement": "out", "ranks": 2}
    edge = [Measurement("all_reduce", "busbw", v, "GB/s", {**params, "bytes": b})
            for b, v in ((8, 5e-324), (16, 1.7e308), (32, -1.7e308), (64, 12.345))]
    edge.append(Measurement("odd", "m", 1.5, "u", {"p": 'v,"1"\n2', "q": "<i>"}))
    with Store.open(db) as s:
        ids = {"edge": s.save_run(Run("coll", hosts=["h<1>&"], ranks=2, tags=ODD_TAGS, errors=[ODD_ERROR],
                                      meta={"warnings": ["doubt <w>"],
                                            "notes": [{"text": "note <n>", "benchmark": "all_reduce"}]}), edge),
               "failed": s.save_run(Run("coll", hosts=["n1"], ranks=2, status="failed", tags={"only": "failed"},
                                        errors=["rank 1 died"]), [])}
        # two runs whose values at 16 B are +-1.7e308: their sd overflows a float
        for k, sign in enumerate((1.0, -1.0)):
            s.save_run(Run("coll", hosts=["e"], ranks=2, tags={"grp": "b", "k": str(k)}),
                       [Measurement(m.benchmark, m.metric, m.value * sign if abs(m.value) > 1e300 else m.value,
                                    m.unit, m.params) for m in edge[:4]])
        s.save_run(Run("coll", hosts=["e"], ranks=2, tags={"grp": "a"}), edge[:4])
    rc, out, _ = _cli("results", "list", "--db", db, "--json", "--limit", "1000")
    runs = {o["id"]: o for o in map(json.loads, out.splitlines())}
    return {"db": db, "tmp": tmp, "runs": runs, **ids}
