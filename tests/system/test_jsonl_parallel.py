"""System tests (jsonl_parallel): a file of clusterbench JSON lines read by worker processes gives
the runs, and the errors, one pass gives."""

from __future__ import annotations

import json
import random

import pytest
from parallel_import import (
    jsonl_measurement,
    jsonl_night,
    jsonl_run,
    jsonl_runs,
    write_jsonl,
)

from clusterbench.ingest import iter_runs, jsonl_parallel

pytestmark = pytest.mark.system


def _same(path, parts: int = 4) -> list:
    one = jsonl_runs(path, 1)
    assert len(jsonl_parallel.parts(str(path))) > parts
    assert jsonl_runs(path, 2) == one
    assert jsonl_runs(path, 3) == one
    return one


def test_a_night_of_runs_gives_the_same_runs(tmp_path, small_parts):
    one = _same(write_jsonl(tmp_path, jsonl_night(200)))
    assert len(one) == 200 and not isinstance(one[0], str)


def test_runs_that_all_print_run_1_give_the_same_runs(tmp_path, small_parts):
    assert len(_same(write_jsonl(tmp_path, jsonl_night(150, shared_id=True)))) == 150


def test_measurements_waiting_across_a_cut_are_read_in_the_main_process(tmp_path, small_parts):
    # two pods' lines interleaved: run 2's measurements come before run 1's run line, so a cut
    # after that line leaves them waiting
    lines, rng = [], random.Random(3)
    for r in range(1, 120, 2):
        for s in range(rng.randrange(1, 12)):   # cuts fall after either run line of a pair
            lines += [jsonl_measurement(r, float(s), {"bytes": 8 << s, "host": f"h{r}"}),
                      jsonl_measurement(r + 1, float(s), {"bytes": 8 << s, "host": f"h{r + 1}"})]
        lines += [jsonl_run(r, f"h{r}"), jsonl_run(r + 1, f"h{r + 1}")]
    assert len(_same(write_jsonl(tmp_path, lines))) == 120


def test_runs_of_one_id_that_cannot_be_told_apart_are_refused_across_parts(tmp_path, small_parts):
    night = jsonl_night(100, shared_id=True)
    # the same measurement twice before one run line: a doubt about every other run of id 1
    late = len(night) * 4 // 5
    lines = night[:late] + [jsonl_measurement(1, 5.0, {"bytes": 8}), jsonl_measurement(1, 6.0, {"bytes": 8}),
                            jsonl_run(1, "late")] + night[late:]
    one = _same(write_jsonl(tmp_path, lines))
    assert one == [f"run 1: its run record is on lines 13 and {late + 3} with different contents "
                   "(the same measurement came twice before one of them), so the measurements on lines 1-12, "
                   f"{late + 1}-{late + 2} cannot be told apart; import each process's output on its own, or keep "
                   "the prefixes pdsh or kubectl logs --prefix put before its lines"]


def test_a_clash_found_in_the_main_process_names_the_files_lines(tmp_path, small_parts):
    # run 7 first prints the same measurement twice (a doubt); a later part's first run of id 7
    # is the clash: its worker does not see the first one, the main process does
    lines = [jsonl_measurement(7, 5.0, {"bytes": 8}), jsonl_measurement(7, 6.0, {"bytes": 8}), jsonl_run(7, "early")]
    for r in range(100, 250):
        rid = 7 if r == 200 else r
        lines += [jsonl_measurement(rid, float(s), {"bytes": 8 << s, "host": f"h{r}"}) for s in range(12)]
        lines.append(jsonl_run(rid, f"h{r}"))
    at = lines.index(jsonl_run(7, "h200")) + 1
    assert _same(write_jsonl(tmp_path, lines)) == [
        f"run 7: its run record is on lines 3 and {at} with different contents (the same measurement came twice "
        f"before one of them), so the measurements on lines 1-2, {at - 12}-{at - 1} cannot be told apart; import "
        "each process's output on its own, or keep the prefixes pdsh or kubectl logs --prefix put before its lines"]


def test_an_error_in_a_later_part_is_raised_at_its_line(tmp_path, small_parts):
    night = jsonl_night(150)
    bad = len(night) - 40
    night[bad] = night[bad].replace('"status": "complete"', '"status": "done"')
    assert _same(write_jsonl(tmp_path, night)) == [f"line {bad + 1}: unknown run status 'done'"]


def test_odd_lines_prefixes_a_byte_order_mark_and_an_unfinished_run(tmp_path, small_parts):
    rng = random.Random(7)
    lines = jsonl_night(160)
    for _ in range(40):
        at = rng.randrange(len(lines))
        lines.insert(at, rng.choice(["W1201 torchrun warning", "{not json", "", "# run 3 stored",
                                     json.dumps({"other": "json"}), "pod-7: " + lines[at]]))
    lines[0] = "\ufeff" + lines[0]
    lines += [jsonl_measurement(999, 1.0, {"bytes": 8})]   # a pod killed before its run line
    one = _same(write_jsonl(tmp_path, lines))
    assert one[-1][0]["errors"] and one[-1][0]["status"] == "incomplete"


def test_a_worker_that_dies_leaves_the_rest_to_the_main_process(tmp_path, small_parts, monkeypatch):
    path = write_jsonl(tmp_path, jsonl_night(200))
    one = jsonl_runs(path, 1)
    real = jsonl_parallel._read
    calls = []

    def dying(*a):
        calls.append(1)
        if len(calls) == 3:   # in a worker: its third part
            import os
            os._exit(9)
        return real(*a)

    monkeypatch.setattr(jsonl_parallel, "_read", dying)
    assert jsonl_runs(path, 2) == one


def _pid(item):
    import os
    return os.getpid()


def test_prepare_runs_in_the_workers(tmp_path, small_parts):
    import os
    path = write_jsonl(tmp_path, jsonl_night(200))
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        pids = list(iter_runs(f, name="night.jsonl", jobs=2, path=str(path), prepare=_pid))
    assert len(pids) == 200 and os.getpid() not in pids and len(set(pids)) == 2


def test_the_import_stores_the_same_runs_and_headline_series_with_any_jobs(tmp_path, small_parts):
    from judge_helpers import run_cli

    from clusterbench.store import Store

    lines = jsonl_night(120)
    for i in range(0, len(lines), 97):   # a line of another spacing: read by the general reader
        if lines[i].startswith('{"kind": "measurement"'):
            lines[i] = lines[i].replace(", ", ",")
    path = write_jsonl(tmp_path, lines)
    assert len(jsonl_parallel.parts(str(path))) > 4
    stored = []
    for jobs in (1, 2):
        db = tmp_path / f"j{jobs}.db"
        code, out, err = run_cli("import", "--jobs", jobs, "--db", db, path)
        assert code == 0, err
        with Store.open(db) as s:
            runs = sorted(s.list_runs(limit=1000), key=lambda r: r.id)
            heads = s.db.execute("SELECT run_id, host, benchmark, metric, value, params FROM headline_measurements"
                                 " ORDER BY run_id, host, benchmark, metric, params").fetchall()
            stored.append(([(r.hosts, r.status, [(m.benchmark, m.metric, m.value, m.params) for m in s.measurements(r.id)])
                            for r in runs], heads))
    assert len(stored[0][0]) == 120 and len(stored[0][1]) == 120 and stored[0] == stored[1]


def test_a_sigkill_of_the_import_ends_its_json_lines_workers(tmp_path):
    from process_helpers import assert_a_sigkilled_import_ends_its_workers

    big = tmp_path / "night.jsonl"
    text = "\n".join(jsonl_night(2000, per_run=40)) + "\n"
    with big.open("w") as f:
        while f.tell() < jsonl_parallel.MIN_BYTES * 3:   # many parts: the workers parse for a while
            f.write(text)
    assert_a_sigkilled_import_ends_its_workers(str(big), str(tmp_path / "r.db"))


def test_the_import_hashes_the_file_while_its_workers_read_and_skips_it_when_imported_before(tmp_path, small_parts,
                                                                                            monkeypatch):
    import multiprocessing

    from clusterbench.ingest import load, workers
    from clusterbench.ingest.load import ImportOptions, import_files

    class Sink:   # what the import tells, as (event, file)
        def __init__(self) -> None:
            self.events: list[tuple[str, str]] = []

        def __getattr__(self, event: str):
            return lambda name, *rest: self.events.append((event, name))

    path = write_jsonl(tmp_path, jsonl_night(60))
    events: list[str] = []
    start, digest = workers.start, load.file_digest

    def started(*a, **k):
        out = start(*a, **k)
        events.append(f"{len(out)} workers")
        return out

    def hashed(p):
        events.append("digest")
        return digest(p)

    monkeypatch.setattr(workers, "start", started)
    monkeypatch.setattr(load, "file_digest", hashed)
    opts = ImportOptions(jobs=2)
    first = import_files([(str(path), "night.jsonl")], opts, Sink(), db=str(tmp_path / "c.db"))
    assert len(first.runs) == 60 and events == ["2 workers", "digest"]
    events.clear()
    sink = Sink()
    again = import_files([(str(path), "night.jsonl")], opts, sink, db=str(tmp_path / "c.db"))
    assert again.already_imported == [{"file": "night.jsonl", "runs": first.runs}] and again.runs == []
    assert events == ["2 workers", "digest"] and [e[0] for e in sink.events] == ["already_imported"]
    assert multiprocessing.active_children() == []   # its workers stopped
