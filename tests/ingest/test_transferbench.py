"""TransferBench 1.0x config output (ingest/transferbench.py) on a real log
(tests/data/transferbench, source in its README)."""

from pathlib import Path

from clusterbench.ingest import detect_tool, parse_text

DATA = Path(__file__).parent.parent / "data" / "transferbench"
V102 = "rccl-issue547-mi100-v1.02-config-4transfers-typo.txt"


def test_v1_02_transfer_rows_and_aggregate():
    # 'Test 1: [1073741824 bytes]', rows 'Transfer 01: G00 -> [GPU 00:004] -> G01 | 8.413 GB/s |
    # 127.626 ms | LOCAL-PCIE-2': the last cell is the link path, not a byte count
    text = (DATA / V102).read_text()
    assert detect_tool(text) == "transferbench"
    (r,) = parse_text(text, name=V102)
    assert r.run.status == "complete" and r.run.source == "transferbench 1.02"
    rows = {m.params["dst"]: m.value for m in r.measurements if m.metric == "bandwidth" and m.params["stat"] == "transfer"}
    assert rows == {"G0": 8.420, "G1": 8.413, "G2": 8.406, "G3": 8.416}
    (one,) = [m for m in r.measurements if m.metric == "bandwidth" and m.params.get("dst") == "G1"]
    assert one.params == {"test": "config", "test_index": 1, "bytes": 1073741824, "src": "G0", "dst": "G1",
                          "method": "GFX", "transfer": 1, "subexecutors": 4, "stat": "transfer"}
    (agg,) = [m for m in r.measurements if m.metric == "bandwidth" and m.params["stat"] == "aggregate"]
    # the four Transfers' bytes over the CPU time: 4 x 1073741824 B / 128.139 ms = 33.518 GB/s
    assert agg.value == 33.518 and agg.params["bytes"] == 4 * 1073741824 and agg.params["timing"] == "cpu"
    times = {m.params.get("dst"): m.value for m in r.measurements if m.metric == "time_us"}
    assert times["G1"] == 127626.0
    assert len(r.measurements) == 10


def test_each_invocation_is_a_run():
    text = (DATA / V102).read_text()
    first, second = parse_text(text + text.replace("8.413 GB/s", "8.500 GB/s"), name="twice.txt")
    assert [m.value for m in first.measurements if m.params.get("dst") == "G1" and m.metric == "bandwidth"] == [8.413]
    assert [m.value for m in second.measurements if m.params.get("dst") == "G1" and m.metric == "bandwidth"] == [8.5]
