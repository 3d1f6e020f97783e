import json
import math

import pytest

from clusterbench import jsontext

# texts msgspec reads as json does, and texts only json reads (beyond the standard, or a str
# msgspec cannot encode): loads must give json.loads's answer for each
TEXTS = [
    '{"bytes": 1048576, "dtype": "float", "host": "gpu0001"}',
    '[{"a": 1}, {"b": [1, 2.5, -0, -0.0, null, true, false]}]',
    "123456789012345678901234567890",            # an integer of any size stays an integer
    "-9223372036854775809",
    "1.00000000000000011102230246251565404236316680908203125",
    "2.5e-324", "1.7976931348623157e308", "0.30000000000000004",
    '{"a": 1, "a": 2}',                           # the last of a key given twice, as json keeps it
    '"\\ud83d\\ude00 \\u00e9 \\u0000 \\n"',
    '{"k": "\u00e9\u4e2d"}',
    " [1 , 2] \n",
    "1e999", "-1E400",                            # json: infinity; msgspec refuses
    "[NaN, Infinity, -Infinity]",
    '"\\ud800"', '"\\udc00\\ud800"',              # lone surrogate escapes
    '"\ud800"',                                   # a lone surrogate in the text itself
]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("text", TEXTS)
def test_loads_gives_what_json_loads_gives(text):
    assert _same(jsontext.loads(text), json.loads(text))
    assert _same(jsontext.loads(text.encode("utf-8", "surrogatepass")) if "\ud800" not in text else json.loads(text),
                 json.loads(text))


def test_loads_keeps_key_order_and_integer_types():
    doc = jsontext.loads('{"z": 1, "a": 2.0, "m": [3]}')
    assert list(doc) == ["z", "a", "m"]
    assert type(doc["z"]) is int and type(doc["a"]) is float


@pytest.mark.parametrize("text", ["", "{", '{"a": }', "[1,]", '{"a": 1} x', "\x01", "[" * 100_000])
def test_loads_refuses_what_json_refuses(text):
    with pytest.raises((ValueError, RecursionError)):
        json.loads(text)
    with pytest.raises((ValueError, RecursionError)):
        jsontext.loads(text)


@pytest.mark.parametrize("obj", [
    [["all_reduce", "busbw", "GB/s"], ["gemm", "tflops", "TFLOP/s"]],
    [(0, 1, 328.2), (1, 0, 1e22), (2, 2, -0.0), (3, 3, 5e-324), (4, 4, 123456789.123)],
    {"host": "gpu\u00e9", "bytes": 10**30, "nested": {"a": [True, None]}},
])
def test_compact_reads_back_as_the_object(obj):
    text = jsontext.compact(obj)
    assert " " not in text.replace("gpu\u00e9", "")
    assert _same(json.loads(text), json.loads(json.dumps(obj)))


def test_compact_writes_text_that_is_not_utf8_as_json_does():
    assert jsontext.compact(["\ud800", 1]) == '["\\ud800",1]'
