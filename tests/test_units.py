import pytest

from clusterbench.errors import UsageError
from clusterbench.units import format_size, parse_rate, parse_size


@pytest.mark.parametrize("text,expected", [
    ("8", 8), ("1K", 1024), ("1k", 1024), ("128M", 128 << 20), ("8G", 8 << 30), ("1T", 1 << 40),
    ("1.5K", 1536), ("64KB", 65536), ("2MiB", 2 << 20), (" 16 ", 16), ("0", 0), (4096, 4096),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["12Q", "", "K", "-1", "1.3", "1e3", "8 G B", "0x10"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_format_size_roundtrip():
    for n in (1, 8, 1000, 1024, 1536, 1 << 20, 3 << 30, 1 << 40):
        assert parse_size(format_size(n)) == n
    assert format_size(1 << 20) == "1M"


@pytest.mark.parametrize("text,bytes_per_s", [
    ("100Gbps", 12.5e9), ("100gbit", 12.5e9), ("1Gbit/s", 1.25e8), ("400Gb/s", 50e9),
    ("50GB/s", 50e9), ("10Mbps", 1.25e6), ("12.5GBps", 12.5e9), ("800MBps", 800e6), ("100gbps", 12.5e9),
])
def test_parse_rate(text, bytes_per_s):
    assert parse_rate(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize("text", ["fast", "100", "100 parsecs", "0Gbps"])
def test_parse_rate_rejects(text):
    with pytest.raises(UsageError):
        parse_rate(text)
