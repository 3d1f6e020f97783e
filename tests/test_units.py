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


@pytest.mark.parametrize("text,expected", [
    ("9007199254740993", 2**53 + 1),                  # a float holds 2**53 + 1 as 2**53
    ("9007199254740993K", (2**53 + 1) << 10),
    ("18446744073709551617", 2**64 + 1),
    ("12345678901234567.5K", 12345678901234567 * 1024 + 512),
    ("0.0009765625K", 1),                             # 2**-10 K is one byte, exactly
    ("1.5G", 3 << 29), ("1.25T", 5 << 38), ("8191.75T", 8191 * 2**40 + 3 * 2**38),
    ("0001.5000K", 1536),                             # zeros that change nothing
    ("1." + "0" * 100 + "K", 1024),
    ("0" * 100 + "7", 7),
    ("9" * 64, 10**64 - 1),
])
def test_parse_size_is_exact(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text,msg", [
    ("9007199254740993.5", "not a whole number"),
    ("1.0000000000000001K", "not a whole number"),     # 1024.0000000000001024, not 1024
    ("8191.999999999999999T", "not a whole number"),   # a float rounds it to 8192T
    ("0.00048828125K", "not a whole number"),          # half a byte
    ("1." + "0" * 100 + "1K", "more than 64 digits"),
    ("1" * 65, "more than 64 digits"),
    ("1" * 5000 + "T", "more than 64 digits"),         # past what int() converts: still one line
    ("1" * 400, "more than 64 digits"),                # a float would be inf
])
def test_parse_size_refuses_inexact(text, msg):
    with pytest.raises(UsageError, match=msg) as e:
        parse_size(text, "--bytes")
    assert len(str(e.value)) < 120


def test_format_size_roundtrip():
    for n in (1, 8, 1000, 1024, 1536, 1 << 20, 3 << 30, 1 << 40, 2**53 + 1, (2**53 + 1) << 40, 2**64 - 1):
        assert parse_size(format_size(n)) == n
    assert format_size(1 << 20) == "1M"


@pytest.mark.parametrize("text,bytes_per_s", [
    ("100Gbps", 12.5e9), ("100gbit", 12.5e9), ("1Gbit/s", 1.25e8), ("400Gb/s", 50e9),
    ("50GB/s", 50e9), ("10Mbps", 1.25e6), ("12.5GBps", 12.5e9), ("800MBps", 800e6), ("100gbps", 12.5e9),
])
def test_parse_rate(text, bytes_per_s):
    assert parse_rate(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize("text", ["fast", "100", "100 parsecs", "0Gbps", "9" * 400 + "GB/s"])
def test_parse_rate_rejects(text):
    with pytest.raises(UsageError):
        parse_rate(text)


@pytest.mark.parametrize("text", ["x" * 10_000, "1" * 5_000 + "parsecs", "100G" + "b" * 5_000])
def test_parse_rate_error_quotes_only_the_start(text):
    # a link_speed tag of 10,000 characters made an error "line" of 10 KB
    with pytest.raises(UsageError) as e:
        parse_rate(text)
    assert len(str(e.value)) < 200
