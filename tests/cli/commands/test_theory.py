"""Tests of clusterbench.cli.commands.theory: ``clusterbench theory``."""

import re

import pytest
from cli_errors import _one_line_error
from judge_helpers import cli, json_lines, save
from nccl_facts import FACTORS as PUBLISHED_FACTOR

from clusterbench.judge.theory import Efficiency, parse_nodes
from clusterbench.records import Measurement

# bytes/s of each link spelling: bits are / 8, GiB is 2^30
LINKS = {"400Gbps": 50e9, "400Gb/s": 50e9, "400gbit": 50e9, "50GB/s": 50e9, "50GBps": 50e9,
         "100GiB/s": 100 * 2**30, "100Mbps": 12.5e6, "1bps": 0.125, "10Tbps": 1.25e12}


ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)$")


def _printed_matches(text: str, exact: float) -> None:
    """A printed cell is ``exact`` to the digits it shows, and a non-zero value never shows as 0."""
    value = float(text)
    assert value != 0 or exact == 0, (text, exact)
    digits = text.split("e")[0].lstrip("-")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    scale = 10 ** int(text.split("e")[1]) if "e" in text else 1
    assert abs(value - exact) <= 0.5 * 10**-decimals * scale * (1 + 1e-9), (text, exact)
    # at least 2 significant digits: 0.01 for 0.0125 is a fifth off
    assert abs(value - exact) <= 0.05 * abs(exact), (text, exact)


BAD_LINKS = ["", " ", "400G", "400", "0", "0Gbps", "0.0Gbps", "-1Gbps", "-400Gbps", "inf", "infGbps",
             "nan", "1e400Gbps", "1" * 400 + "Gbps", "100us", "100TFLOP/s", "100 furlongs", "fast",
             "100Gbps\x00", "x" * 10000]


BAD_NODES = ["0", "1", "-2", "", ",", "2,", ",2", "2,,4", "x", "+2", "2.0", "1e3", "0x10", "²", "٢",
             "２", "9" * 400, "9" * 5000, str(2**53 + 1)]


def _coll(op: str, sizes: list[int], placements: tuple[str, ...], value) -> list[Measurement]:
    ms = []
    for b in sizes:
        for pl in placements:
            p = {"bytes": b, "placement": pl, "ranks": 32}
            ms.append(Measurement(op, "algbw", value(b, pl), "GB/s", dict(p)))
            ms.append(Measurement(op, "busbw", 2 * value(b, pl), "GB/s", dict(p)))
    return ms


def _several_ops() -> list[Measurement]:
    return (_coll("all_reduce", [1 << 20, 1 << 30], ("in",), lambda b, pl: 1 + b / 1e9)
            + _coll("all_gather", [1 << 10, 1 << 20], ("out", "in"), lambda b, pl: 3 + b / 1e6)
            + _coll("alltoall", [1 << 16], ("out",), lambda b, pl: 7.5)
            + _coll("broadcast", [1 << 24], ("in",), lambda b, pl: 11.0)
            + _coll("reduce_scatter", [1 << 26], ("out",), lambda b, pl: 0.004)
            + [Measurement("stream", "bandwidth", 900.0, "GB/s", {"kernel": "Triad"})])


def test_cli_theory_table(capsys):
    from judge_helpers import cli, json_lines

    rc, out, _ = cli(capsys, "theory", "--link", "100Gbps", "--nodes", "2,4,8,16,24,32")
    assert rc == 0
    for n, v in ((2, "12.50"), (4, "8.33"), (8, "7.14"), (16, "6.67"), (24, "6.52"), (32, "6.45")):
        assert f"{n:>6} {v:>13}" in out
    rc, out, _ = cli(capsys, "theory", "--nodes", "2", "--json")
    lines = json_lines(out)
    assert {(o["metric"], o["value"], o["unit"], o["params"]["nodes"]) for o in lines} == {
        ("optimal_algbw", 12.5, "GB/s", 2), ("optimal_busbw", 12.5, "GB/s", 2)}
    rc, _, err = cli(capsys, "theory", "--link", "100 furlongs")
    assert rc == 2 and err.startswith("clusterbench: error: invalid rate")


def test_cli_efficiency_of_stored_runs(db, capsys):
    from judge_helpers import cli, json_lines, save

    # the seed's two-machine nccl-test: 8.42 GB/s algbw over 100 Gbps is 67% of optimal
    ms = [Measurement("all_reduce", m, 8.42, "GB/s", {"bytes": 1 << 32, "placement": "out", "ranks": 16})
          for m in ("algbw", "busbw")]
    rid = save(db, ms, hosts=["a", "b"], tags={"link_speed": "100Gbps"})
    rc, out, _ = cli(capsys, "theory", "--nodes", "2", "--run", str(rid), "--db", db)
    assert rc == 0 and (f"# run {rid}: all_reduce out-of-place 4294967296 B on 2 nodes: 8.42 GB/s = 67% of"
                        " 12.50 GB/s over 100Gbps") in out
    rc, out, _ = cli(capsys, "theory", "--link", "400Gbps", "--run", str(rid), "--db", db, "--json")
    eff = [o for o in json_lines(out) if o["kind"] == "efficiency"]
    assert eff and eff[0]["run"] == rid and abs(eff[0]["efficiency"] - 8.42 / 50) < 1e-9
    assert eff[0]["link"] == "400Gbps" and eff[0]["optimal_algbw"] == 50
    # without --link, each run's own link_speed tag is the link it is judged against
    fast = save(db, ms, hosts=["a", "b"], tags={"link_speed": "400Gbps"})
    rc, out, _ = cli(capsys, "theory", "--nodes", "2", "--run", str(fast), "--db", db)
    assert rc == 0 and "8.42 GB/s = 17% of 50.00 GB/s over 400Gbps" in out
    # a row without a placement (DDP's gradient sync) says nothing about one
    assert Efficiency("ddp_comm", 4194304, "", 2, 1.0, 2.0).label == "ddp_comm 4194304 B"
    assert Efficiency("net", 8, "a->b", 2, 1.0, 2.0).label == "net a->b 8 B"
    single = save(db, ms, hosts=["a"])
    rc, _, err = cli(capsys, "theory", "--run", str(single), "--db", db)
    assert rc == 2 and "2 or more hosts" in err


@pytest.mark.parametrize("link", sorted(LINKS))
def test_table_recomputed_from_formula(capsys, link):
    nodes = [2, 3, 4, 24, 1000000]
    rc, out, err = cli(capsys, "theory", "--link", link, "--nodes", ",".join(map(str, nodes)))
    assert rc == 0, err
    rows = [ROW.match(line) for line in out.splitlines() if ROW.match(line)]
    assert [int(r.group(1)) for r in rows] == nodes
    b = LINKS[link] / 1e9
    for r, n in zip(rows, nodes):
        _printed_matches(r.group(2), b * n / (2 * (n - 1)))
        _printed_matches(r.group(3), b)
    rc, out, _ = cli(capsys, "theory", "--link", link, "--nodes", ",".join(map(str, nodes)), "--json")
    assert rc == 0
    got = {(o["metric"], o["params"]["nodes"]): o["value"] for o in json_lines(out)}
    for n in nodes:
        assert got["optimal_algbw", n] == pytest.approx(b * n / (2 * (n - 1)), rel=1e-12)
        assert got["optimal_busbw", n] == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("link", BAD_LINKS)
def test_bad_link_one_line_exit_2(capsys, link, as_json):
    rc, out, err = cli(capsys, "theory", "--link", link, "--nodes", "2", *(["--json"] if as_json else []))
    _one_line_error(rc, out, err)
    assert out == ""   # refused before the table, not after it
    assert len(err) < 300


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("nodes", BAD_NODES)
def test_bad_nodes_one_line_exit_2(capsys, nodes, as_json):
    rc, out, err = cli(capsys, "theory", "--nodes", nodes, *(["--json"] if as_json else []))
    _one_line_error(rc, out, err)
    assert out == "" and len(err) < 300


def test_large_node_counts(capsys):
    assert parse_nodes(f" 2 ,02,{2**53}") == [2, 2, 2**53]
    rc, out, _ = cli(capsys, "theory", "--nodes", f"1000000,{2**53}", "--json")
    assert rc == 0
    algbw = {o["params"]["nodes"]: o["value"] for o in json_lines(out) if o["metric"] == "optimal_algbw"}
    assert algbw == {1000000: pytest.approx(12.5 * 1000000 / 1999998, rel=1e-12), 2**53: pytest.approx(6.25, rel=1e-12)}


def test_link_text_printed_on_one_line(capsys):
    rc, out, _ = cli(capsys, "theory", "--link", "100Gbps\n", "--nodes", "2")
    assert rc == 0
    assert out.splitlines()[0].startswith("# optimal all_reduce over ") and out.count("\n") == 3
    rc, out, _ = cli(capsys, "theory", "--link", "\x1c100Gbps", "--nodes", "2")
    assert rc == 0 and "\x1c" not in out


def test_run_of_several_ops_and_sizes(db, capsys):
    hosts = ["a", "b", "c", "d"]
    rid = save(db, _several_ops(), hosts=hosts, tags={"link_speed": "400Gbps"})
    rc, out, err = cli(capsys, "theory", "--nodes", "2", "--run", str(rid), "--db", db, "--json")
    assert rc == 0, err
    effs = [o for o in json_lines(out) if o["kind"] == "efficiency"]
    algbw = {(m.benchmark, m.params["bytes"], m.params["placement"]): m.value
             for m in _several_ops() if m.metric == "algbw"}
    assert {(o["benchmark"], o["bytes"], o["placement"]) for o in effs} == set(algbw)
    for o in effs:
        n = len(hosts)
        assert o["nodes"] == n and o["link"] == "400Gbps" and o["run"] == rid
        opt = 50.0 / PUBLISHED_FACTOR[o["benchmark"]](n)
        assert o["optimal_algbw"] == pytest.approx(opt, rel=1e-12)
        assert o["algbw"] == algbw[o["benchmark"], o["bytes"], o["placement"]]
        assert o["efficiency"] == pytest.approx(o["algbw"] / opt, rel=1e-12)
    rc, out, err = cli(capsys, "theory", "--nodes", "2", "--run", str(rid), "--db", db)
    assert rc == 0, err
    lines = [line for line in out.splitlines() if line.startswith(f"# run {rid}:")]
    shown = re.compile(rf"# run {rid}: (\w+) (\S+) (\d+) B on (\d+) nodes: (\S+) GB/s = (\S+)% of (\S+) GB/s"
                       r" over 400Gbps$")
    seen = set()
    for line in lines:
        m = shown.match(line)
        assert m, line
        op, where, size, n = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        placement = {"out-of-place": "out", "in-place": "in"}[where]
        # each op and placement at its own largest size: the row that shows the link's limit
        assert size == max(b for (o, b, p) in algbw if o == op and p == placement)
        measured, opt = algbw[op, size, placement], 50.0 / PUBLISHED_FACTOR[op](n)
        _printed_matches(m.group(5), measured)
        _printed_matches(m.group(7), opt)
        _printed_matches(m.group(6), 100 * measured / opt)
        seen.add((op, placement))
    assert seen == {(o, p) for (o, _, p) in algbw}


def test_run_without_host_count(db, capsys):
    # an imported log that names no host: its node count is unknown, and the error says how to give it
    ms = _coll("all_reduce", [1 << 30], ("in",), lambda b, pl: 8.42)
    rid = save(db, ms, hosts=[])
    for extra in ([], ["--json"]):
        rc, out, err = cli(capsys, "theory", "--run", str(rid), "--db", db, *extra)
        _one_line_error(rc, out, err)
        assert f"run {rid}" in err and "nodes=" in err
    tagged = save(db, ms, hosts=[], tags={"nodes": "2"})
    rc, out, _ = cli(capsys, "theory", "--run", str(tagged), "--db", db, "--json")
    (e,) = [o for o in json_lines(out) if o["kind"] == "efficiency"]
    assert e["nodes"] == 2 and e["optimal_algbw"] == 12.5 and e["efficiency"] == pytest.approx(8.42 / 12.5)


def test_bad_link_speed_tag_names_the_run(db, capsys):
    ms = _coll("all_reduce", [1 << 30], ("in",), lambda b, pl: 8.42)
    good = save(db, ms, hosts=["a", "b"], tags={"link_speed": "100Gbps"})
    for tag in ("bogus", "0Gbps", "100Gbps\x1b[31m"):
        bad = save(db, ms, hosts=["a", "b"], tags={"link_speed": tag})
        for extra in ([], ["--json"]):
            rc, out, err = cli(capsys, "theory", "--run", str(good), "--run", str(bad), "--db", db, *extra)
            _one_line_error(rc, out, err)
            assert f"run {bad}" in err and "link_speed" in err and "\x1b" not in err
            assert out == ""   # checked before the table, not after part of the output
        # --link overrides the tag
        rc, out, _ = cli(capsys, "theory", "--link", "100Gbps", "--run", str(bad), "--db", db)
        assert rc == 0 and "67% of 12.50 GB/s" in out


def test_explicit_empty_link_with_runs(db, capsys):
    ms = _coll("all_reduce", [1 << 30], ("in",), lambda b, pl: 8.42)
    rid = save(db, ms, hosts=["a", "b"], tags={"link_speed": "400Gbps"})
    rc, out, err = cli(capsys, "theory", "--link", "", "--run", str(rid), "--db", db)
    _one_line_error(rc, out, err)


def test_huge_nodes_tag(db, capsys):
    ms = _coll("all_reduce", [1 << 30], ("in",), lambda b, pl: 5.0)
    rid = save(db, ms, hosts=["a", "b"], tags={"nodes": "9" * 400})
    rc, out, err = cli(capsys, "theory", "--run", str(rid), "--db", db, "--json")
    assert rc == 0, err
    (e,) = [o for o in json_lines(out) if o["kind"] == "efficiency"]
    # B n / (2 (n - 1)) is B / 2 to the last digit a float holds
    assert e["optimal_algbw"] == pytest.approx(6.25, rel=1e-12)
    assert e["efficiency"] == pytest.approx(0.8, rel=1e-12)


def test_small_numbers_not_printed_as_zero(db, capsys):
    ms = _coll("all_reduce", [1 << 20], ("in",), lambda b, pl: 0.0004)
    rid = save(db, ms, hosts=["a", "b"], tags={"link_speed": "10Mbps"})
    rc, out, err = cli(capsys, "theory", "--run", str(rid), "--db", db)
    assert rc == 0, err
    m = re.search(r"GB/s = \S+% of (\S+) GB/s", out)
    assert m and " 0.00 GB/s" not in out
    _printed_matches(m.group(1), 10e6 / 8 / 1e9)


def test_wide_node_counts_keep_the_columns(capsys):
    rc, out, _ = cli(capsys, "theory", "--nodes", f"2,1000000,{2**53}")
    head, *rows = out.splitlines()[1:]
    assert rc == 0 and len(rows) == 3 and {len(r) for r in rows} == {len(head)}
