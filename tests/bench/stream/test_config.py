"""Tests of clusterbench.bench.stream.config."""

from __future__ import annotations

import pytest

from clusterbench.bench.stream.config import parse_sweep, stream_config
from clusterbench.errors import UsageError


def test_sweep_parsing():
    assert parse_sweep("1M:8M") == [1 << 20, 2 << 20, 4 << 20, 8 << 20]
    assert parse_sweep("1K:64K:4") == [1024, 4096, 16384, 65536]
    for bad in ("8M:1M", "0:1M", "1M", "1M:2M:1", "x:1M"):
        with pytest.raises(UsageError):
            parse_sweep(bad)


def test_stream_size_sweep_measures_each_array_size_once() -> None:
    # 1, 2 and 4 bytes of double all round up to one element: once, not three identical rows
    cfg = stream_config("1", 2, "double", "1:32", "all", "cpu", None, True)
    assert cfg.sizes == (1, 2, 4)
    assert stream_config("1", 2, "float", "12:48", "all", "cpu", None, True).sizes == (3, 6, 12)


def test_no_size_given_is_the_default_sized_on_the_device():
    cfg = stream_config(None, 100, "double", None, "all", "cpu", None, True)
    assert cfg.sizes == () and cfg.numtimes == 100 and cfg.strict_size


def test_a_default_size_that_does_not_fit_says_what_to_do(monkeypatch):
    from clusterbench.bench import devices as devs
    from clusterbench.errors import UsageError

    monkeypatch.setattr(devs, "free_memory", lambda dev: 1 << 20)
    with pytest.raises(UsageError, match=r"^the default array size \d+: 3 double arrays need .* \(give a smaller -s"):
        stream_config(None, 100, "double", None, "all", "cpu", None, True)
