"""Tests of clusterbench.units: sizes, rates and counts as users type them."""

from decimal import Decimal

import pytest
from stored_runs import EXTREMES

from clusterbench.errors import UsageError
from clusterbench.units import (
    compact,
    convert,
    fit,
    fixed,
    format_plain,
    format_size,
    format_threshold,
    id_ranges,
    parse_rate,
    parse_size,
    whole_number,
)


@pytest.mark.parametrize("value, width, decimals, want", [
    (12.5, 6, 2, " 12.50"),              # ordinary values: printf's %6.2f, unchanged
    (-0.0, 6, 2, " -0.00"),
    (1e-300, 6, 2, "  0.00"),
    (1.7e308, 6, 2, "2e+308"),
    (-1.7e308, 6, 2, "-2e308"),          # the exponent's + goes before any digit would
    (1.7e308, 10, 2, "  1.7e+308"),
    (123456789012345678.0, 10, 2, "1.2346e+17"),
    (123456789012345678.0, 7, 0, "1.2e+17"),
    (1e15, 6, 2, " 1e+15"),
])
def test_fixed_keeps_the_column_width(value, width, decimals, want):
    assert fixed(value, width, decimals) == want


def test_fit_never_cuts_a_value_short():
    for v in EXTREMES:
        for width in range(5, 13):
            cell = fit(f"{v:{width}.2f}", v, width)
            if len(f"{v:{width}.2f}") <= width:
                assert cell == f"{v:{width}.2f}"
                continue
            assert len(cell) == width or v == -1.7e308
            # the cell is the value rounded (2e+308 is past the float limit: compared as decimals),
            # never a prefix of its digits
            number, exact = Decimal(cell.strip()), Decimal(v)
            assert number == exact or abs(number - exact) <= abs(exact) / 2, (v, width, cell)


def test_format_plain_and_compact_switch_to_an_exponent_only_at_the_extremes():
    assert format_plain(4177285) == "4,177,285" and format_plain(0.00005) == "0.00005"
    assert format_plain(1.7e308) == "1.7e+308" and format_plain(5e-324) == "5e-324"
    assert format_plain(-0.0) == "0" and format_plain(123456789012345678.0) == "1.23456789012e+17"
    assert compact(94.123) == "94.12" and compact(-7.5, 1, sign=True) == "-7.5"
    assert compact(1.7e308) == "1.7e+308" and compact(3.25e302, 1, sign=True) == "+3.25e+302"


def test_units_convert():
    assert convert(94100, "GFLOP/s", "TFLOP/s") == pytest.approx(94.1)
    assert convert(4177285, "MB/s", "GB/s") == pytest.approx(4177.285)
    with pytest.raises(ValueError):
        convert(1, "GB/s", "us")


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


@pytest.mark.parametrize(("value", "shown"), [
    ("x" * 10_000, "'" + "x" * 32 + "'..."),
    ("9" * 5000, "more than 4000 digits"),
    (10**5000, "(a number of 16610 bits)"),    # str() of it raises past 4300 digits
    (float("nan"), "nan"),
    ([3], "[3]"),
], ids=["long text", "5000 digits", "10**5000", "nan", "list"])
def test_the_error_is_one_short_line_naming_what(value, shown):
    with pytest.raises(UsageError) as e:
        whole_number(value, what="rank count", minimum=1)
    text = str(e.value)
    assert text.startswith("invalid rank count ") and shown in text
    assert "\n" not in text and len(text) < 120


def test_range_and_clamp():
    assert whole_number("2", what="n", minimum=2, maximum=4) == 2
    assert whole_number(4.0, what="n", minimum=2, maximum=4) == 4
    for bad in ("1", 5, "05"):
        with pytest.raises(UsageError, match="from 2 to 4"):
            whole_number(bad, what="n", minimum=2, maximum=4)
    assert whole_number("5", what="n", minimum=2, maximum=4, clamp=True) == 4
    assert whole_number(10**5000, what="n", maximum=4, clamp=True) == 4
    with pytest.raises(UsageError):   # clamping is above the range only
        whole_number("1", what="n", minimum=2, maximum=4, clamp=True)
    assert whole_number("\t\n 7 \r\x0b\x0c", what="n") == 7


def test_format_threshold_keeps_whole_digits_and_drops_float_noise():
    assert format_threshold(0.810390207374) == "0.81039" and format_threshold(4177285) == "4,177,285"
    assert format_threshold(4177.285) == "4,177.29" and format_threshold(94.1) == "94.1"
    assert format_threshold(1.7e308) == "1.7e+308" and format_threshold(0.00005) == "0.00005"


def test_id_ranges():
    assert id_ranges([7, 1, 2, 3, 9, 10]) == "1-3, 7, 9-10"
    assert id_ranges([]) == ""
