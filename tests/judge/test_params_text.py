"""judge.params_text: a record's params less some keys as canonical JSON, each set written once."""

import json

from clusterbench.families import IDENTITY_PARAMS
from clusterbench.judge import params_text
from clusterbench.judge.params_text import ParamsText, params_json


def _plain(params: dict, drop: frozenset = frozenset()) -> str:
    return json.dumps({k: v for k, v in params.items() if k not in drop}, sort_keys=True, default=str)


def test_the_text_is_json_dumps_of_the_kept_params_for_values_alike_as_keys():
    text = ParamsText(IDENTITY_PARAMS)
    # equal or alike as dict keys (1 == 1.0 == True, 0.0 == -0.0), apart as JSON: never mixed up
    cases = [{"x": 1}, {"x": 1.0}, {"x": True}, {"x": "1"}, {"x": 0.0}, {"x": -0.0}, {"x": None},
             {"x": float("nan")}, {"x": float("inf")}, {"x": [1, 2]}, {"x": {"y": 1}},
             {"b": 2, "a": 1, "host": "h1"}, {"a": 1, "b": 2, "host": "h2", "device": "3"}]
    for _ in range(2):   # the second round is answered from the memo
        for params in cases:
            assert text(params) == _plain(params, IDENTITY_PARAMS), params
    # key order and the dropped keys do not make another row
    assert text({"b": 2, "a": 1, "host": "h1"}) == text({"a": 1, "b": 2, "host": "h9"}) == '{"a": 1, "b": 2}'
    assert text.kept({"b": 2, "host": "h1", "a": 1}) == {"b": 2, "a": 1}
    assert params_json({"b": 1, "a": object.__new__(object)}).startswith('{"a": "<object object')


def test_the_memo_stops_growing_at_its_bound(monkeypatch):
    monkeypatch.setattr(params_text, "MEMO_SIZE", 3)
    text = ParamsText()
    for host in range(10):
        assert text({"host": f"h{host}"}) == f'{{"host": "h{host}"}}'
        assert len(text._memo) <= 3


def test_the_key_tells_params_apart_exactly_as_their_texts_do():
    text = ParamsText(IDENTITY_PARAMS)
    cases = [{"x": 1}, {"x": 1.0}, {"x": True}, {"x": "1"}, {"x": 0.0}, {"x": -0.0}, {"x": None}, {"x": [1, 2]},
             {"b": 2, "a": 1, "host": "h1"}, {"a": 1, "b": 2, "host": "h2"}, {"a": 1, "b": "2"}, {"a": 1},
             {"a": 1, "device": "3"}, {"a": None}, {"a": "None"}, {"a": 1, "b": 2.0}]
    for p in cases:
        for q in cases:
            assert (text.key(p) == text.key(q)) == (text(p) == text(q)), (p, q)
            if text(p) == text(q):
                assert hash(text.key(p)) == hash(text.key(q))
