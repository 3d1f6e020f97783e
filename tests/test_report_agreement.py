"""One store, every form: ``results show`` (table and ``--json``), ``results export`` (JSON lines
and CSV), ``compare`` (table and ``--json``) and ``report`` (HTML and Markdown) must show the same
rows, values (at the printed precision), units, statuses, errors, warnings and notes, and the
pages must escape what came from a log (control characters included) and fetch nothing."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

import pytest
from judge_helpers import run_cli

from clusterbench.records import Measurement, Run
from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
RCCL = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"      # out- and in-place columns
A3 = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"
PKB = DATA / "nccl-tests" / "pkb-k80-2node-transitional-format-wrong-na.txt"   # N/A in #wrong
PERFTEST = DATA / "perftest" / "cx7-ndr-4-tools-mib-sec-default-cpu-freq-warnings.txt"   # import warnings
BABEL = DATA / "babelstream" / "kaanolgu-v4.0-openacc-v100-validation-failed.txt"   # failed, errors
VLLM = DATA / "vllm-serving" / "vllm-pr7062-serving-result-text-truncated.txt"     # incomplete
OSU = DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt"

ODD_TAGS = {"team": 'a,b "q" <b>&amp;', "nl": "x\ny", "ctl": "bell\x07\x1b[31m"}
ODD_ERROR = "boom <b>bold</b> & \x1b[2J"


def _cli(*argv: object) -> tuple[int, str, str]:
    return run_cli(*argv)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
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


def _lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


def _report(store: dict, *selectors: str) -> tuple[str, str]:
    out = store["tmp"] / ("r_" + "_".join(re.sub(r"\W", "-", s) for s in selectors) + ".html")
    rc, _, err = _cli("report", *selectors, "--db", store["db"], "-o", out)
    assert rc == 0, err
    return out.read_text(encoding="utf-8"), out.with_suffix(".md").read_text(encoding="utf-8")


def test_show_json_export_and_csv_hold_the_same_measurements(store):
    for rid, listed in store["runs"].items():
        _, shown, _ = _cli("results", "show", rid, "--db", store["db"], "--json")
        ms = [o for o in _lines(shown) if o["kind"] == "measurement"]
        assert len(ms) == listed["measurements"], rid
        _, exported, _ = _cli("results", "export", rid, "--db", store["db"])
        assert [o for o in _lines(exported) if o["kind"] == "measurement"] == ms, rid
        _, text, _ = _cli("results", "export", rid, "--db", store["db"], "--csv")
        rows = list(csv.DictReader(io.StringIO(text)))
        assert len(rows) == len(ms), rid
        for m, row in zip(ms, rows):
            assert (row["benchmark"], row["metric"], row["unit"]) == (m["benchmark"], m["metric"], m["unit"])
            assert float(row["value"]) == m["value"]
            # quotes, commas and newlines in a param survive CSV quoting
            assert {k: row[k] for k in m["params"]} == {k: str(v) for k, v in m["params"].items()}


def _table(text: str) -> dict[tuple, list[str]]:
    """The nccl-tests table of ``results show``: (bytes, dtype, redop, root) -> the 8 cells."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 13 and parts[0].isdigit():
            rows[(int(parts[0]), parts[2], parts[3], int(parts[4]))] = parts[5:]
    return rows


def _shows(cell: str, value: float) -> bool:
    """``cell`` is ``value`` at the precision it was printed with."""
    if "e" in cell:
        return float(cell) == float(f"{value:.{max(len(cell.split('e')[0].strip('-').replace('.', '')) - 1, 0)}e}")
    decimals = len(cell.split(".")[1]) if "." in cell else 0
    return abs(float(cell) - value) <= 0.5 * 10 ** -decimals * (1 + 1e-9)


@pytest.mark.parametrize("selector", ["file=0,side=A", "file=2,side=A"])
def test_collective_table_shows_every_json_value(store, selector):
    column = {"time_us": 0, "algbw": 1, "busbw": 2, "wrong": 3}
    _, text, _ = _cli("results", "show", selector, "--db", store["db"])
    _, js, _ = _cli("results", "show", selector, "--db", store["db"], "--json")
    table = _table(text)
    assert table
    filled = set()
    for m in (o for o in _lines(js) if o["kind"] == "measurement"):
        p = m["params"]
        if m["metric"] not in column:
            continue
        key = (p["bytes"], p["dtype"], p["redop"], p["root"])
        j = column[m["metric"]] + (4 if p["placement"] == "in" else 0)
        assert _shows(table[key][j], m["value"]), (key, m["metric"], table[key][j], m["value"])
        filled.add((key, j))
    # every number in the table is a stored value; the rest is N/A (never nan, never inf)
    for key, cells in table.items():
        for j, cell in enumerate(cells):
            assert cell == "N/A" if (key, j) not in filled else cell not in ("nan", "inf"), (key, j, cell)


def test_import_warnings_are_warning_lines_in_show_json(store):
    run = next(r for r in store["runs"].values() if r["meta"].get("warnings") and r["tags"].get("side") == "C")
    _, text, _ = _cli("results", "show", run["id"], "--db", store["db"])
    _, js, _ = _cli("results", "show", run["id"], "--db", store["db"], "--json")
    for w in run["meta"]["warnings"]:
        assert f"# warning: {w}" in text
        assert {"kind": "warning", "run": run["id"], "text": w} in _lines(js)


def test_compare_table_and_json_agree(store):
    for a, b in (("side=A", "side=B"), ("grp=a", "grp=b")):
        rc, text, _ = _cli("compare", a, b, "--db", store["db"])
        rcj, js, _ = _cli("compare", a, b, "--db", store["db"], "--json")
        assert rc == rcj == 0
        lines = _lines(js)
        rows = [o for o in lines if o["kind"] == "comparison"]
        summary = lines[-1]
        body = [x for x in text.splitlines() if x and not x.startswith(("#", "benchmark "))]
        assert len(body) == len(rows)
        for line, c in zip(body, rows):
            assert line.split()[:2] == [c["benchmark"], c["metric"]]
            assert f"{c['mean_a']:.4g}" in line and f"{c['mean_b']:.4g}" in line
        assert f"({len(summary['runs_a'])} run(s)), B = {b} ({len(summary['runs_b'])} run(s))" in text
        for status, n in summary["counts"].items():
            assert not n or f"{n} {status}" in text.splitlines()[-1]


def _text_of(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_report_keeps_errors_warnings_and_notes_and_escapes_them(store):
    edge = store["runs"][store["edge"]]
    page, md = _report(store, "side=C", str(store["edge"]))
    # no fetches: figures are data URIs
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    for raw in ("<b>bold", "<w>", "<n>", "<i>", "h<1>", "\x1b", "\x07"):
        assert raw not in page and raw not in md, raw
    shown = _text_of(page)
    mdown = html.unescape(md.replace("\\\\", "\\"))
    for r in (r for r in store["runs"].values() if r["tags"].get("side") == "C" or r["id"] == store["edge"]):
        for text in [*r["errors"][:5], *(r["meta"].get("warnings") or [])]:
            expected = text.replace("\x1b", "\\x1b")
            assert expected in shown, (r["id"], text)
            assert expected in mdown, (r["id"], text)
        assert r["status"] in shown and r["status"] in md
    assert "note <n>" in shown and "note <n>" in mdown
    # tags as results show prints them: quoted where needed, control characters escaped
    _, text, _ = _cli("results", "show", store["edge"], "--db", store["db"])
    tags = next(x for x in text.splitlines() if x.startswith("# tags: "))[len("# tags: "):]
    assert tags in shown and tags in mdown
    assert edge["measurements"] == 5 and re.search(rf'<td class="n">{store["edge"]}</td>.*?<td class="n">5</td>',
                                                   page, re.S)


def test_report_size_table_never_prints_inf(store):
    page, _ = _report(store, "grp=a", "grp=b")
    cells = re.findall(r'<td class="n">([^<]*)</td>', page)
    assert not [c for c in cells if re.search(r"\b(inf|nan)\b", c)]
    assert "1.7e+308" in cells


def test_report_of_a_run_that_measured_nothing_shows_its_failure(store):
    page, md = _report(store, str(store["failed"]))
    assert "FAIL" in page and "rank 1 died" in page
    assert "**FAIL**" in md and "rank 1 died" in md and "| failed |" in md
