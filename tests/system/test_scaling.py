"""System tests (scaling): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import json

from work_helpers import cli

from clusterbench.store import Store


def test_real_runs_by_ranks_full_then_hybrid(capsys, db):
    """1 rank, then 2 ranks with hybrid sharding (shard groups of 1: two replicas), as one series."""
    for np, extra in (("1", []), ("2", ["--strategy", "hybrid", "--shard-size", "1"])):
        code, out, err = cli(capsys, "train", "--np", np, "--device", "cpu", "--steps", "2", "--warmup", "1",
                             "--batch", "4", "--no-comm-share", "--json", "--db", db, "--tag", "exp=scale", *extra)
        assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["params"]["strategy"] for r in rows} == {"hybrid"}
    assert not [r for r in rows if r["metric"] == "comm_share"]
    with Store.open(db) as store:
        assert store.list_runs(limit=1)[0].meta["train"]["shard_size"] == 1
    code, out, err = cli(capsys, "scaling", "exp=scale", "--by", "ranks", "--json", "--db", db)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["params"]["nodes"] for r in rows if r["metric"] == "speedup") == [1, 2]
    code, _, err = cli(capsys, "scaling", "exp=nothing", "--db", db)
    assert code == 2 and "matches no run" in err
