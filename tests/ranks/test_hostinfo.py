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
