"""TransferBench output (real logs, tests/data/transferbench) -> transfer records."""

from pathlib import Path

import pytest

from clusterbench.ingest import detect_tool, parse_text

DATA = Path(__file__).parent / "data" / "transferbench"


def load(name):
    runs = parse_text((DATA / name).read_text(), name=name)
    assert len(runs) == 1
    assert {m.benchmark for m in runs[0].measurements} == {"transfer"}
    return runs[0]


def pick(ms, **params):
    found = [m for m in ms if all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (params, found)
    return found[0]


@pytest.mark.parametrize("path", sorted(p for p in DATA.iterdir() if p.name != "README.md"), ids=lambda p: p.name)
def test_every_log_is_detected(path):
    assert detect_tool(path.read_text()) == "transferbench"


@pytest.mark.parametrize("name", ["seed-mi300x-a2a.txt", "sysaccept-mi300x-a2a.txt"])
def test_a2a_summary(name):
    ms = load(name).measurements
    assert len([m for m in ms if m.params["stat"] == "pair"]) == 56  # 8x8 without the diagonal
    assert pick(ms, stat="pair", src="G0", dst="G1").value == 43.666
    assert pick(ms, stat="pair", src="G7", dst="G6").value == 42.553
    assert pick(ms, stat="row_total", src="G3").value == 209.546
    assert pick(ms, stat="row_actual", src="G3").value == 199.797
    assert pick(ms, stat="col_total", dst="G0").value == 244.827
    assert pick(ms, stat="average").value == 35.776
    assert pick(ms, stat="aggregate", timing="gpu").value == 2003.44
    assert pick(ms, stat="aggregate", timing="cpu").value == 1411.163
    assert all(m.params["test"] == "a2a" and m.unit == "GB/s" for m in ms)


def test_a2a_with_env_dump_and_transfer_table():
    r = load("rocm-blogs-mi300x-a2a-v1.60.txt")
    ms = r.measurements
    assert r.run.source == "transferbench 1.60.00"
    assert pick(ms, stat="average").value == 46.552
    assert pick(ms, stat="pair", src="G1", dst="G0").value == 47.0
    assert pick(ms, stat="pair", src="G0", dst="G1").params["bytes"] == 67108864
    t = pick(ms, stat="transfer", transfer=8, metric=None) if False else None
    transfers = [m for m in ms if m.params.get("stat") == "transfer" and m.metric == "bandwidth"]
    assert len(transfers) == 56 and transfers[0].params["src"] == "F0" and transfers[0].params["dst"] == "F1"
    assert t is None and not r.run.errors  # env lines like CONTINUE_ON_ERROR are not errors


@pytest.mark.parametrize("name", ["seed-mi300x-p2p.txt", "sysaccept-mi300x-p2p.txt"])
def test_p2p_uni_and_bidirectional(name):
    ms = load(name).measurements
    uni = [m for m in ms if m.params["direction"] == "uni" and m.params["stat"] == "pair"]
    assert len(uni) == 100 and all(m.params["bytes"] == 67108864 and m.params["method"] == "GFX" for m in uni)
    assert pick(ms, direction="uni", stat="pair", src="G0", dst="G0").value == 1689.85
    assert pick(ms, direction="uni", stat="pair", src="C1", dst="G7").value == 42.6
    assert pick(ms, direction="uni", stat="average", src="G", dst="G").value == 48.44
    assert pick(ms, direction="bi", stat="average", src="G", dst="G").value == 46.24
    assert pick(ms, direction="bi", stat="average", src="C", dst="C").value == 30.72
    both = pick(ms, direction="bi", stat="pair", src="G0", dst="G1", leg=None)
    assert both.value == 92.2
    assert pick(ms, direction="bi", stat="pair", src="G0", dst="G1", leg="src_to_dst").value == 46.11
    assert pick(ms, direction="bi", stat="pair", src="G0", dst="G1", leg="dst_to_src").value == 46.09
    assert not [m for m in ms if m.params.get("src") == "C0" and m.params.get("dst") == "C0"
                and m.params["direction"] == "bi"]  # N/A


def test_p2p_preset_with_env_block():
    ms = load("docs-presets-p2p-mi350x-v1.67.txt").measurements
    assert pick(ms, direction="uni", stat="pair", src="G6", dst="G6").params["bytes"] == 268435456
    assert pick(ms, direction="bi", stat="average", src="G", dst="G").value == 54.66


@pytest.mark.parametrize("name", ["seed-mi300x-example-cfg.txt", "sysaccept-mi300x-examplecfg.txt"])
def test_config_file_tests(name):
    ms = [m for m in load(name).measurements if m.metric == "bandwidth"]
    t1 = pick(ms, test_index=1, stat="transfer")
    assert t1.value == 47.774 and t1.params["src"] == "G0" and t1.params["dst"] == "G1"
    assert t1.params["method"] == "GFX" and t1.params["subexecutors"] == 4
    assert t1.params["name"] == "Single GPU-executed Transfer between GPUs 0 and 1 using 4 CUs"
    assert pick(ms, test_index=2, stat="transfer").params["method"] == "DMA"
    assert pick(ms, test_index=3, stat="transfer", src="G1").value == 39.603
    assert pick(ms, test_index=4, stat="transfer").params["src"] == "N"
    assert pick(ms, test_index=6, stat="transfer").params["dst"] == "G0G1"
    assert pick(ms, test_index=5, stat="executor").params["method"] == "CPU"
    assert pick(ms, test_index=1, stat="aggregate").value == 42.49
    times = [m for m in load(name).measurements if m.metric == "time_us"]
    assert pick(times, test_index=1, stat="transfer").value == pytest.approx(1405.0)


def test_box_drawing_tables_and_doc_annotations():
    ms = load("docs-presets-sweep-v1.67.txt").measurements
    t = pick([m for m in ms if m.metric == "bandwidth"], stat="transfer", transfer=11)
    assert (t.params["src"], t.params["dst"], t.params["method"], t.value) == ("G1", "C1", "GFX", 22.151)
    assert pick([m for m in ms if m.metric == "bandwidth"], stat="executor", executor="D6").value == 53.665
    assert pick([m for m in ms if m.metric == "bandwidth"], stat="aggregate").value == 295.108
    ms = load("docs-timing-config-example-v1.6x.txt").measurements
    bw = [m for m in ms if m.metric == "bandwidth" and m.params["stat"] == "transfer"]
    assert [m.value for m in bw] == [4.476, 0.014, 80.886, 48.807]  # "Transfer N Time =" lines ignored
