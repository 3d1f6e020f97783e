"""Tables of recent nccl-tests (2.17.5 on) and rccl-tests options, read value for value.

The variants here are SYNTHETIC, built at test time from real logs in tests/data/nccl-tests
(README.md, "Synthetic variants"): a real table re-printed in the layout the tool's source
prints for an option (nccl-tests src/util.cu and src/common.cu, rccl-tests src/common.cu).
Every value comes from the real log; only the layout (and, where said, the footer the tool
computes from those values) is the option's.
"""

from pathlib import Path

import pytest

from clusterbench.ingest import LogFormatError, parse_text

DATA = Path(__file__).parent / "data" / "nccl-tests"
GH200 = "issue369-v2.17.8-gh200-wrong-nonzero-oob-failed.txt"   # nccl-tests 2.17.8, 2 ranks
MI355X = "seed-tensorwave-mi355x-4node-all_reduce.txt"          # rccl-tests, 32 ranks


def lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def is_row(line: str) -> bool:
    return line[:1] == " " and line.split()[0].isdecimal()


def right(widths: tuple[int, ...], values: list[str]) -> str:
    """Values right-aligned in C printf widths ("%12s  %12s ..."), two spaces apart."""
    return "  ".join(v.rjust(w) for w, v in zip(widths, values, strict=True))


LEAD, BLOCK = (12, 12, 8, 6, 6), (7, 6, 6, 6)


def printed(toks: list[str]) -> tuple[str, str, str]:
    """A row's lead, out-of-place and in-place parts in nccl-tests' widths (util.cu)."""
    return right(LEAD, toks[:5]), "  " + right(BLOCK, toks[5:9]), "  " + right(BLOCK, toks[9:13])


def rows_of(name: str) -> list[list[str]]:
    return [ln.split() for ln in lines(name) if is_row(ln)]


def one(text: str, name: str):
    runs = parse_text(text, name=name)
    assert len(runs) == 1
    return runs[0]


def table(ms) -> dict[tuple, dict[str, float]]:
    """{(bytes, placement, cycle): {metric: value}} with every row param checked on the way."""
    out: dict[tuple, dict[str, float]] = {}
    for m in ms:
        if "bytes" not in m.params:
            continue
        key = (m.params["bytes"], m.params["placement"], m.params.get("cycle"))
        out.setdefault(key, {"count": m.params["count"], "dtype": m.params["dtype"],
                             "redop": m.params["redop"], "root": m.params["root"]})[m.metric] = m.value
    return out


def expected(rows: list[list[str]], placements=("out", "in"), cycle=None) -> dict[tuple, dict[str, float]]:
    """The printed table as the records it must give: size, count, type, redop, root, then per
    placement time, algbw, busbw, #wrong."""
    want: dict[tuple, dict[str, float]] = {}
    for toks in rows:
        for i, placement in enumerate(placements):
            time, alg, bus, wrong = toks[5 + 4 * i:9 + 4 * i]
            want[(int(toks[0]), placement, cycle)] = {
                "count": int(toks[1]), "dtype": toks[2], "redop": toks[3], "root": int(toks[4]),
                "time_us": float(time), "algbw": float(alg), "busbw": float(bus), "wrong": float(wrong)}
    return want


# -- nccl-tests -S 1: a timestamp on every row ------------------------------------------

def with_timestamps(name: str, at_end: bool) -> str:
    """The log re-printed as nccl-tests -S 1 prints it: "timestamp" after the header's last
    #wrong, the strftime format under it, and each row's time of day (2.17.5-2.18: after the
    out-of-place values; 2.19 on: at the row's end)."""
    out, n = [], 0
    for ln in lines(name):
        if ln.startswith("#") and "#wrong" in ln:
            ln = ln.rstrip() + " " + "timestamp".rjust(19)
        elif ln.startswith("#") and "(elements)" in ln:
            ln = ln.rstrip() + " " + "%Y-%m-%d %H:%M:%S".rjust(19)
        elif is_row(ln):
            lead, oop, ip = printed(ln.split())
            stamp = f"2026-01-23 10:00:{n:02d}".rjust(21)
            n += 1
            ln = lead + oop + ip + stamp if at_end else lead + oop + stamp + ip
        out.append(ln)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("at_end", [False, True], ids=["v2.17.5-2.18-mid-row", "v2.19-row-end"])
def test_timestamped_rows_read_value_for_value(at_end):
    # Before the fix every such row had two tokens too many: all 25 rows were dropped without a
    # word and the run stored as complete with only its footer.
    text = with_timestamps(GH200, at_end)
    assert text.count("2026-01-23") == 25
    r = one(text, "gh200-timestamps.log")
    assert table(r.measurements) == expected(rows_of(GH200))
    assert r.run.meta["columns_not_stored"] == ["timestamp"]
    assert r.run.status == "failed"   # the log's own "Out of bounds values : 4 FAILED"
    bad = table(r.measurements)[(1048576, "out", None)]
    assert (bad["wrong"], bad["busbw"], bad["time_us"]) == (96.0, 2.20, 477.32)
    assert table(r.measurements)[(1048576, "in", None)]["wrong"] == 32.0
    assert r.run.ranks == 2 and r.run.meta["op"] == "all_reduce"
    assert "rows_missing" not in r.run.meta   # the footer's 4.79995 is still the rows' mean


def test_timestamps_read_the_same_through_a_launcher_prefix():
    text = with_timestamps(GH200, at_end=True)
    tagged = "".join(f"[1,0]<stdout>:{ln}\n" for ln in text.splitlines())
    want = table(one(text, "a.log").measurements)
    assert table(one(tagged, "a.log").measurements) == want


# -- nccl-tests -N: the sweep printed again, nothing between --------------------------------

def with_cycles(name: str, cycles: int) -> str:
    """nccl-tests -N <cycles> (TimeTest's do/while since 2024-07): the rows printed again right
    after the last one; the footer's average is the mean of all of them (the same here)."""
    out, rows = [], []
    for ln in lines(name):
        if is_row(ln):
            rows.append(ln)
            continue
        if rows:
            out += rows * cycles
            rows = []
        out.append(ln)
    return "\n".join(out + rows * cycles) + "\n"


def test_repeated_sweep_is_read_as_cycles_not_refused_as_interleaved():
    # Before the fix: "sizes repeat out of order ... several runs interleaved", nothing stored.
    r = one(with_cycles(GH200, 3), "gh200-N3.log")
    rows = rows_of(GH200)
    want = {**expected(rows, cycle=0), **expected(rows, cycle=1), **expected(rows, cycle=2)}
    assert table(r.measurements) == want
    assert r.run.meta["cycles"] == 3 and "rows_missing" not in r.run.meta
    assert r.run.status == "failed"


def test_repeated_sweep_without_its_footer_is_still_refused():
    # processes writing into one stream each print a footer; rows repeated with no footer after
    # them (a log cut short) cannot be told from such output
    text = "\n".join(ln for ln in with_cycles(GH200, 2).splitlines() if not ln.startswith("# Avg bus"))
    with pytest.raises(LogFormatError, match="interleaved.*-N"):
        parse_text(text, name="x.log")


def test_rows_of_several_runs_are_still_refused():
    # one sweep whose second half comes again out of order: not a -N repeat
    text = (DATA / GH200).read_text()
    body = [ln for ln in text.splitlines() if is_row(ln)]
    mixed = text.replace("\n".join(body), "\n".join(body + body[5:] + body[:5]))
    with pytest.raises(LogFormatError, match="interleaved"):
        parse_text(mixed, name="x.log")


# -- rccl-tests -O 0: only the in-place block -------------------------------------------

def in_place_only(name: str) -> str:
    """rccl-tests -O 0 (common.cu: the in-place title and one block of columns): the log's rows
    with their in-place values only; the footer is the mean of those busbw, as the tool adds up
    only the tests it ran."""
    out, bus = [], []
    for ln in lines(name):
        if ln.startswith("#") and "#wrong" in ln:
            out.append("# " + right((10, 12, 8, 6, 6), [""] * 5) + "           in-place          ")
            out.append("# " + right((10, 12, 8, 6, 6, 7, 6), ["size", "count", "type", "redop", "root", "time",
                                                           "algbw"]) + "  " + "busbw".rjust(6) + " " + "#wrong".rjust(6))
        elif ln.startswith("#") and "(elements)" in ln:
            out.append("# " + right((10, 12, 8, 6, 6, 7, 6, 6, 5), ["(B)", "(elements)", "", "", "", "(us)",
                                                                  "(GB/s)", "(GB/s)", ""]))
        elif is_row(ln):
            toks = ln.split()
            bus.append(float(toks[11]))
            out.append(right(LEAD, toks[:5]) + "  " + right((7, 6, 6, 5), toks[9:13]))
        elif ln.startswith("# Avg bus bandwidth"):
            out.append(f"# Avg bus bandwidth    : {sum(bus) / len(bus):g} ")
        else:
            out.append(ln)
    return "\n".join(out) + "\n"


def test_in_place_only_table_is_stored_as_in_place():
    # Before the fix its one block of values was stored as placement "out".
    r = one(in_place_only(MI355X), "mi355x-O0.log")
    rows = [t[:5] + t[9:13] for t in rows_of(MI355X)]
    assert table(r.measurements) == expected(rows, placements=("in",))
    assert r.run.status == "complete" and r.run.ranks == 32
    assert table(r.measurements)[(8589934592, "in", None)]["busbw"] == 370.42


def test_in_place_title_applies_to_its_own_table_only():
    # the next run's ordinary two-block table is read as out-of-place and in-place again
    text = in_place_only(MI355X) + (DATA / MI355X).read_text()
    runs = parse_text(text, name="all_reduce.log")
    assert [sorted({k[1] for k in table(r.measurements)}) for r in runs] == [["in"], ["in", "out"]]
