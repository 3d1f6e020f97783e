"""Tests of clusterbench.ranks.hostinfo: what the driver does on every rank around a benchmark."""

from types import SimpleNamespace

from clusterbench.ranks.context import RankOptions


def test_one_sampler_per_host_is_kept(monkeypatch):
    """Under a launcher that sets no local rank every rank samples; rank 0 keeps one per host."""

    from clusterbench.ranks import hostinfo as ranks
    from clusterbench.store import TelemetrySample

    def rows(host):
        return ([TelemetrySample(1.0, "cpu_utilization", 5.0, "%", host, "")], {}, 0.001)

    monkeypatch.setattr(ranks, "_gather", lambda ctx, obj: [rows("a"), rows("a"), rows("b"), None])
    emitted = []
    ctx = SimpleNamespace(options=RankOptions(telemetry_interval=1.0), is_root=True,
                          telemetry=lambda samples: emitted.append(("telemetry", samples)),
                          meta=lambda data: emitted.append(("meta", data)))
    ranks.finish_sampler(ctx, None)
    (samples,) = [d for k, d in emitted if k == "telemetry"]
    assert sorted(s.host for s in samples) == ["a", "b"]
    (meta,) = [d for k, d in emitted if k == "meta"]
    assert meta["telemetry"]["samples"] == 2 and meta["telemetry"]["sampler_cpu_s"] == 0.002


def test_each_host_inventory_carries_the_cpus_of_its_ranks(monkeypatch):
    """Every rank asks for its own affinity (a launcher binds ranks apart); only a host's local
    rank 0 sends the inventory, and rank 0 adds each rank to its host's, in rank order."""
    from clusterbench.ranks import hostinfo as ranks

    inv = {"host": "a", "nics": []}
    gathered = [("a", inv, {"rank": 0, "local_rank": 0, "cpus": "0-3"}),
                ("b", None, {"rank": 3, "local_rank": 1, "cpus": "12-15"}),
                ("a", None, {"rank": 1, "local_rank": 1, "cpus": "4-7"}),
                ("b", {"host": "b"}, {"rank": 2, "local_rank": 0, "cpus": "8-11"})]
    monkeypatch.setattr(ranks, "_gather", lambda ctx, obj: gathered)
    emitted = []
    ctx = SimpleNamespace(env=SimpleNamespace(local_rank=0, host="a"), hosts=["a", "a", "b", "b"], rank=0,
                          is_root=True, meta=emitted.append)
    ranks.record_inventory(ctx)
    (meta,) = emitted
    assert [(r["rank"], r["cpus"]) for r in meta["inventory"]["a"]["ranks"]] == [(0, "0-3"), (1, "4-7")]
    assert [r["rank"] for r in meta["inventory"]["b"]["ranks"]] == [2, 3]
    assert "ranks" not in inv   # the cached inventory of this process stays as it was


def test_a_rank_sends_its_own_affinity(monkeypatch):
    import os

    from clusterbench.envinfo.context import cpu_list
    from clusterbench.ranks import hostinfo as ranks

    sent = []
    monkeypatch.setattr(ranks, "_gather", lambda ctx, obj: sent.append(obj) or [obj])
    ctx = SimpleNamespace(env=SimpleNamespace(local_rank=1, host="a"), hosts=["a", "a"], rank=1, is_root=False)
    ranks.record_inventory(ctx)
    assert sent == [("a", None, {"rank": 1, "local_rank": 1, "cpus": cpu_list(os.sched_getaffinity(0))})]
