"""The JSON lines parser with ``clusterbench.jsontext`` (msgspec's C decoder and encoder, json
where they cannot) side by side with the same parser on the ``json`` module alone, its peer.

Then the store's read side: every run's pack body (the text the store keeps a run's rows in,
read back by trend, report, baseline and export) decoded by ``jsontext.loads`` and by
``json.loads``, alternated the same way.

The text is one night of the fleet store's JSON lines (``fleet_scale.write_night``: 418
measurements of an 8-GPU node a run). Each round parses it twice in this process, once each way,
alternating which goes first; CPU time (``time.process_time``) of each parse is printed, then the
medians and their ratio. Both ways must give the same runs, measurement for measurement, or the
script exits 1: a speed-up that changes the answer is not one.

    python benchmarks/jsontext_vs_json.py                 # 1,000 runs, 5 rounds
    python benchmarks/jsontext_vs_json.py --hosts 200 --rounds 9
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_scale import write_night  # noqa: E402

from clusterbench import jsontext  # noqa: E402
from clusterbench.ingest import clusterbench_jsonl  # noqa: E402


@contextmanager
def json_only():
    """jsontext's C decoder and encoder replaced by json's: the parser as it was before them."""
    decode, encode = jsontext._decode, jsontext._encode
    jsontext._decode = json.loads
    jsontext._encode = lambda obj: jsontext.json_compact(obj).encode()
    try:
        yield
    finally:
        jsontext._decode, jsontext._encode = decode, encode


def parse_cpu(text: str) -> tuple[float, list]:
    gc.collect()
    start = time.process_time()
    runs = clusterbench_jsonl.parse(text, "night.jsonl")
    return time.process_time() - start, runs


def digest(runs: list) -> list:
    return [(r.run.id, [(m.benchmark, m.metric, m.value, m.unit, sorted(m.params.items())) for m in r.measurements])
            for r in runs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000, help="runs in the night (default 1000)")
    ap.add_argument("--rounds", type=int, default=5, help="parses each way (default 5)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "night.jsonl"
        write_night(path, 41, 1, args.hosts)
        text = path.read_text()
    print(f"# {args.hosts} runs, {len(text) / 1e6:.1f} MB of JSON lines, {text.count(chr(10))} lines")
    times: dict[str, list[float]] = {"jsontext": [], "json": []}
    answers: dict[str, list] = {}
    for i in range(args.rounds):
        order = ("jsontext", "json") if i % 2 == 0 else ("json", "jsontext")
        for way in order:
            if way == "json":
                with json_only():
                    cpu, runs = parse_cpu(text)
            else:
                cpu, runs = parse_cpu(text)
            times[way].append(cpu)
            if way not in answers:
                answers[way] = digest(runs)
            print(f"round {i}  {way:8s}  {cpu:.2f} s CPU")
    if answers["jsontext"] != answers["json"]:
        print("error: the two parsers gave different runs", file=sys.stderr)
        return 1
    summary("parse", times, args.hosts)
    # a fresh parse: digest() above unpacked those runs into Measurement objects
    bodies = [pack.body for r in clusterbench_jsonl.parse(text, "night.jsonl") for pack in r.store_rows().packs]
    decoded: dict[str, list[float]] = {"jsontext": [], "json": []}
    for i in range(args.rounds):
        order = ("jsontext", "json") if i % 2 == 0 else ("json", "jsontext")
        for way in order:
            decode = jsontext.loads if way == "jsontext" else json.loads
            docs = None
            gc.collect()   # the other way's garbage collected outside the timing, not inside this one's
            start = time.process_time()
            docs = list(map(decode, bodies))
            decoded[way].append(time.process_time() - start)
        if i == 0 and docs != list(map(jsontext.loads, bodies)):
            print("error: the two decoders gave different packs", file=sys.stderr)
            return 1
    summary(f"pack bodies decoded ({len(bodies)}, {sum(map(len, bodies)) / 1e6:.1f} MB)", decoded, args.hosts)
    return 0


def summary(what: str, times: dict[str, list[float]], runs: int) -> None:
    a, b = statistics.median(times["jsontext"]), statistics.median(times["json"])
    print(f"{what}, median CPU: jsontext {a:.3f} s ({min(times['jsontext']):.3f}-{max(times['jsontext']):.3f}), "
          f"json {b:.3f} s ({min(times['json']):.3f}-{max(times['json']):.3f}); ratio jsontext/json {a / b:.2f}; "
          f"{runs / a:.0f} against {runs / b:.0f} runs/s")


if __name__ == "__main__":
    sys.exit(main())
