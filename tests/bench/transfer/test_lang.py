"""Tests of clusterbench.bench.transfer.lang: a small transfer language, close to TransferBench's config lines."""

from __future__ import annotations

import pytest

from clusterbench.bench.transfer import lang
from clusterbench.bench.transfer import main as tmain
from clusterbench.bench.transfer.matrices import Planned
from clusterbench.errors import UsageError
from clusterbench.families.transfer.table import TransferTable as TransferRenderer
from clusterbench.records import Measurement, Run


def _pair(src, dst, v, stat="pair", direction="uni"):
    return Measurement("transfer", "bandwidth", v, "GB/s", {
        "src": src, "dst": dst, "direction": direction, "method": "copy_engine", "bytes": 1024,
        "test": "a2a", "stat": stat})


def test_short_form_and_defaults():
    t = lang.parse_line("G0->G1 C0->G2@1M; U0->C0", 4096, "x")
    assert [str(x) for x in t.transfers] == ["G0->D0->G1", "C0->D2->G2", "U0->C0->C0"]
    assert [x.bytes for x in t.transfers] == [4096, 1 << 20, 4096]
    assert lang.parse_line("   # only a comment", 4, "x") is None


@pytest.mark.parametrize("line,words", [
    ("G0", "expected SRC->DST"),
    ("X0->G1", "invalid memory type 'X'"),
    ("G0->Z0->G1", "invalid executor"),
    ("N->N", "cannot both be N"),
    ("G0G1->G2", "several sources"),
    ("G0->G1@3", "multiple of 4"),
    ("2 4 (G0->G0->G1)", "says 2 transfer(s), lists 1"),
    ("-1 (G0 G0 G1 4)", "expected (SRC EXE DST SUBEXECS BYTES)"),
    ("G->G1", "needs an index"),
])
def test_language_errors(line, words):
    with pytest.raises(UsageError) as e:
        lang.parse_line(line, 1024, "x")
    assert words in str(e.value)


def test_summary_and_matrix_table():
    p = Planned(lang.Test("a2a", ()), "a2a", "uni", "copy_engine", "")
    pairs = [_pair("G0", "G1", 40.0), _pair("G1", "G0", 30.0), _pair("G0", "G0", 1000.0)]
    summ = tmain.summary_rows(p, pairs)
    assert [(m.param("src"), m.param("stat"), m.value) for m in summ] == [
        ("G0", "row_total", 40.0), ("G1", "row_total", 30.0), ("*", "average", 35.0)]
    r = TransferRenderer()
    run = Run("transfer", devices=["AMD Instinct MI300X"],
              meta={"device_names": {"G0": "AMD Instinct MI300X", "G1": "AMD Instinct MI300X"}})
    lines = r.header(run) + r.rows(pairs + summ)
    text = "\n".join(lines)
    assert "SRC->DST" in text and "average 35.00 GB/s" in text
    g0 = next(ln for ln in lines if ln.strip().startswith("G0 "))
    assert g0.split() == ["G0", "1000.00", "40.00", "40.00"]
    # MI300X: one Infinity Fabric link is 128 GB/s both ways, 64 one way: 40 GB/s is 62.5%.
    assert "62.5%" in text


def test_bidirectional_row_totals_count_both_ends():
    p = Planned(lang.Test("p2p", ()), "p2p", "bi", "copy_engine", "")
    pairs = [_pair("G0", "G1", 90.0, direction="bi"), _pair("G0", "G2", 80.0, direction="bi"),
             _pair("G1", "G2", 70.0, direction="bi")]
    summ = tmain.summary_rows(p, pairs)
    assert [(m.param("src"), m.value) for m in summ] == [
        ("G0", 170.0), ("G1", 160.0), ("G2", 150.0), ("*", 80.0)]


@pytest.mark.parametrize("line", ["1 99999999999999999999 (C0->C0->C0)", "-1 (C0 C0 C0 65537 64K)"])
def test_a_huge_sub_executor_count_is_refused(line):
    with pytest.raises(UsageError, match="sub-executors .*at most 65536"):
        lang.parse_text(line + "\n", 65536)


@pytest.mark.parametrize("text", ["1 \u00b2 (C0->C0->C0)", "-1 (C0 C0 C0 \u00b2 1K)", "C\u0663->C0@1K",
                                  "1 4 (C0->C\u0661->C0)"])
def test_digits_other_than_ascii_are_one_usage_error(text):
    # "²" passed str.isdigit and then int() raised (internal error); "٣" read as NUMA node 3
    with pytest.raises(UsageError):
        lang.parse_text(text, 4096)
