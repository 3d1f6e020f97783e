import pytest

from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import optimal_algbw
from clusterbench.judge.theory import Efficiency, link_efficiency, parse_nodes, theory_table
from clusterbench.records import Measurement


def test_seed_table_100gbps():
    rows = theory_table("100Gbps", parse_nodes("2,4,8,16,24,32"))
    assert [round(r.algbw, 2) for r in rows] == [12.5, 8.33, 7.14, 6.67, 6.52, 6.45]
    # busbw of the optimum is the link speed itself
    assert all(abs(r.busbw - 12.5) < 1e-9 for r in rows)


def test_other_collectives():
    assert optimal_algbw("all_gather", 12.5e9, 4) == pytest.approx(12.5 * 4 / 3)
    assert optimal_algbw("broadcast", 12.5e9, 4) == pytest.approx(12.5)
    assert optimal_algbw("gemm", 12.5e9, 4) is None


def test_efficiency_seed_two_machines():
    # The seed: 8.42 GB/s algbw on 2 machines is 67% of the 12.5 GB/s maximum.
    ms = [Measurement("all_reduce", "algbw", 8.42, "GB/s", {"bytes": 1 << 32, "placement": "out"}),
          Measurement("all_reduce", "busbw", 8.42, "GB/s", {"bytes": 1 << 32, "placement": "out"})]
    (e,) = link_efficiency(ms, 2, 12.5e9)
    assert round(e.ratio, 2) == 0.67


def test_bad_nodes():
    for bad in ("1", "x", "2,,4"):
        with pytest.raises(UsageError):
            parse_nodes(bad)
    with pytest.raises(UsageError):
        theory_table("fast", [2])


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
