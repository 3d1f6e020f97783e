"""ingest.load.import_files: files into the store, one transaction each, told to a sink as
they go; a file imported before is skipped, a file that fails leaves nothing stored."""

import json
from pathlib import Path

import pytest

from clusterbench.errors import ClusterbenchError
from clusterbench.ingest.load import ImportOptions, completed, import_files
from clusterbench.records import Run
from clusterbench.store import Store
from clusterbench.store.batch import Batch

DATA = Path(__file__).parent.parent / "data"
NCCL = DATA / "nccl-tests" / "seed-tensorwave-mi355x-4node-all_reduce.txt"
STREAM = DATA / "babelstream" / "repo-results-v3.3-titanxp-cuda.txt"
FAILED_LOG = DATA / "nccl-tests" / "issue287-5090-2gpu-test-nccl-failure-no-rows.txt"
OPTS = ImportOptions(tags={"site": "lab"}, command=("clusterbench", "import"), jobs=1)


class Sink:
    def __init__(self, fail_on_stored: bool = False) -> None:
        self.events: list[tuple[str, ...]] = []
        self.fail_on_stored = fail_on_stored

    def stored(self, name, run, item):
        self.events.append(("stored", name, str(run.id), str(len(item))))
        if self.fail_on_stored:
            raise ClusterbenchError("disk full")

    def shown(self, text):
        self.events.append(("shown", text))

    def not_stored(self, name, text):
        self.events.append(("not_stored", name, text))

    def already_imported(self, name, text):
        self.events.append(("already_imported", name, text))

    def failed(self, name, error):
        self.events.append(("failed", name, error))


def _runs(db):
    with Store.open_to_read(db) as store:
        return store.list_runs()


def test_files_are_stored_with_the_import_tags_and_told_as_they_go(db):
    sink = Sink()
    result = import_files([(str(NCCL), "nccl.txt"), (str(STREAM), "stream.txt")], OPTS, sink, db=db)
    assert result.exit_code == 0 and result.stored and result.files == 2
    assert [e[:2] for e in sink.events] == [("stored", "nccl.txt"), ("stored", "stream.txt")]
    runs = _runs(db)
    assert sorted(r.id for r in runs) == result.runs and result.counts["complete"] == 2
    assert all(r.tags["site"] == "lab" and r.command == ["clusterbench", "import"] for r in runs)


def test_a_file_imported_before_is_skipped_with_its_runs(db):
    import_files([(str(NCCL), "nccl.txt")], OPTS, Sink(), db=db)
    sink = Sink()
    result = import_files([(str(NCCL), "again.txt")], OPTS, sink, db=db)
    assert result.runs == [] and result.already_imported == [{"file": "again.txt", "runs": [1]}]
    assert sink.events == [("already_imported", "again.txt",
                            "again.txt: already imported as run(s) 1 (same content): skipped")]
    # other tags make another import
    other = import_files([(str(NCCL), "nccl.txt")], ImportOptions(tags={"site": "b"}, jobs=1), Sink(), db=db)
    assert other.runs == [2]


def test_a_file_read_in_one_process_is_not_parsed_once_known_as_imported_before(db, monkeypatch):
    from clusterbench.ingest import load

    import_files([(str(NCCL), "nccl.txt")], OPTS, Sink(), db=db)

    def parsed(*a, **k):
        raise AssertionError("parsed, though imported before")

    monkeypatch.setattr(load, "runs_of", parsed)
    result = import_files([(str(NCCL), "again.txt")], OPTS, Sink(), db=db)
    assert result.already_imported == [{"file": "again.txt", "runs": [1]}] and result.runs == []


@pytest.mark.parametrize("today", ["reads it", "refuses it"])
def test_a_file_read_in_parts_is_known_as_imported_before_a_run_of_it_is_stored(db, monkeypatch, today):
    """Where workers read a file, its digest waits until they are at work (Lines.meanwhile); the
    file is still skipped before a run is stored, and still skipped where this version's parser
    refuses what an earlier one stored."""
    from clusterbench.ingest import load
    from clusterbench.ingest.common import LogFormatError

    first = import_files([(str(NCCL), "nccl.txt")], OPTS, Sink(), db=db)
    monkeypatch.setattr(load, "read_in_parts", lambda path, jobs: True)
    if today == "refuses it":
        def refused(*a, **k):
            raise LogFormatError("malformed nccl-tests log")
            yield

        monkeypatch.setattr(load, "runs_of", refused)
    sink = Sink()
    result = import_files([(str(NCCL), "again.txt")], OPTS, sink, db=db)
    assert result.already_imported == [{"file": "again.txt", "runs": first.runs}] and result.runs == []
    assert [e[0] for e in sink.events] == ["already_imported"]
    assert [r.id for r in _runs(db)] == first.runs
    # a new file read so is stored as before, its identity noted
    result = import_files([(str(STREAM), "stream.txt")], OPTS, Sink(), db=db)
    if today == "reads it":
        assert len(result.runs) == 1 and result.exit_code == 0
        again = import_files([(str(STREAM), "stream.txt")], OPTS, Sink(), db=db)
        assert again.already_imported == [{"file": "stream.txt", "runs": result.runs}]
    else:
        assert result.failed_files == [{"file": "stream.txt", "error": "malformed nccl-tests log"}]


def test_a_file_read_in_parts_that_cannot_be_hashed_says_so_before_its_parse_error(db, monkeypatch):
    from clusterbench.ingest import load
    from clusterbench.ingest.common import LogFormatError

    def unreadable(path):
        raise ClusterbenchError("Permission denied")

    def refused(*a, **k):
        raise LogFormatError("unknown format")
        yield

    monkeypatch.setattr(load, "read_in_parts", lambda path, jobs: True)
    monkeypatch.setattr(load, "file_digest", unreadable)
    monkeypatch.setattr(load, "runs_of", refused)
    result = import_files([(str(NCCL), "nccl.txt")], OPTS, Sink(), db=db)
    assert result.failed_files == [{"file": "nccl.txt", "error": "Permission denied"}]


def test_a_file_that_fails_midway_is_rolled_back_and_the_others_stored(db):
    sink = Sink(fail_on_stored=True)
    result = import_files([(str(NCCL), "nccl.txt")], OPTS, sink, db=db)
    assert result.exit_code == 2 and result.runs == []
    assert result.failed_files == [{"file": "nccl.txt", "error": "disk full"}]
    assert sink.events[1:] == [
        ("not_stored", "nccl.txt", "nccl.txt: run(s) 1 printed above were not stored: "
                                   "a file is stored whole or not at all"),
        ("failed", "nccl.txt", "disk full")]
    assert _runs(db) == []
    missing = import_files([(str(NCCL.parent / "missing.txt"), "missing.txt"), (str(STREAM), "s")], OPTS,
                           Sink(), db=db)
    assert [f["file"] for f in missing.failed_files] == ["missing.txt"] and len(missing.runs) == 1


def test_a_failed_run_makes_exit_code_1(db):
    result = import_files([(str(FAILED_LOG), "f.txt")], OPTS, Sink(), db=db)
    assert result.counts["failed"] == 1 and result.exit_code == 1


def test_a_dry_run_stores_nothing_and_shows_what_render_makes(db):
    def render(name, run, item):
        return f"{name} {run.status} {run.tags['site']} {len(item)}\n"

    sink = Sink()
    result = import_files([(str(NCCL), "nccl.txt")], OPTS, sink, db=db, dry_run=True, render=render)
    assert sink.events == [("shown", "nccl.txt complete lab 42\n")]
    assert not result.stored and result.runs == [] and result.counts["complete"] == 1
    assert not Path(db).exists()
    with pytest.raises(TypeError):
        import_files([(str(NCCL), "nccl.txt")], OPTS, Sink(), dry_run=True)


def test_completed_keeps_a_reimported_command_and_hosts():
    run = Run(benchmark="import", command=["clusterbench", "coll"], hosts=["a"])
    completed(run, ImportOptions(host="b", tags={"k": "v"}, command=("clusterbench", "import")))
    assert run.command == ["clusterbench", "coll"] and run.hosts == ["a"] and run.tags == {"k": "v"}
    bare = completed(Run(benchmark="import"), ImportOptions(host="b", command=("x",)))
    assert bare.command == ["x"] and bare.hosts == ["b"]


def _jsonl_run(run_id: int, host: str, night: int = 0, records: int = 40) -> list[str]:
    """One run as clusterbench prints it with --json: its measurements (busbw of ``records``
    sizes on ``host``), then its run line."""
    lines = [json.dumps({"kind": "measurement", "run": run_id, "benchmark": "all_reduce", "metric": "busbw",
                         "value": round(100 + i + night / 1000, 3), "unit": "GB/s",
                         "params": {"bytes": 1 << i, "ranks": 8, "host": host}}) for i in range(records)]
    lines.append(json.dumps({"kind": "run", "id": run_id, "benchmark": "coll", "source": "clusterbench",
                             "command": ["clusterbench", "coll"], "started_at": f"2026-01-01T00:{night // 60:02d}:"
                             f"{night % 60:02d}.000Z", "ended_at": None, "status": "complete", "hosts": [host],
                             "ranks": 8, "devices": [], "versions": {}, "env": {}, "tags": {"node": host},
                             "errors": [], "meta": {}}))
    return lines


def test_runs_that_all_print_run_1_are_stored_as_distinct_runs(any_db, tmp_path):
    """Fresh pods each print run 1: every run line takes the measurements before it, and each is
    a run of its own in the store, with its own host's records."""
    path = tmp_path / "pods.jsonl"
    path.write_text("".join(line + "\n" for i in range(300) for line in _jsonl_run(1, f"pod{i:03d}", night=i)))
    result = import_files([(str(path), "pods.jsonl")], OPTS, Sink(), db=any_db)
    assert result.exit_code == 0 and len(result.runs) == 300
    with Store.open_to_read(any_db) as store:
        runs = store.runs_by_ids(result.runs)
        assert [r.hosts for r in runs] == [[f"pod{i:03d}"] for i in range(300)]
        assert all(r.source == "clusterbench, imported from pods.jsonl (run 1)" for r in runs)
        for i in (0, 137, 299):
            ms = store.measurements(result.runs[i])
            assert len(ms) == 40 and {m.params["host"] for m in ms} == {f"pod{i:03d}"}
            assert ms[5].value == round(105 + i / 1000, 3)


def test_one_bad_line_deep_in_a_large_file_stores_nothing(any_db, tmp_path, monkeypatch):
    """A line that is no measurement, thousands of lines and several bulk writes into a file
    (blocks of 1 MiB read at once), is refused by its number, and none of the file's runs stay."""
    monkeypatch.setattr(Batch, "FLUSH_BYTES", 1 << 12)   # the runs before it already written
    lines = [line for i in range(600) for line in _jsonl_run(i + 1, f"gpu{i:03d}", night=i)]
    bad = 41 * 500 + 7   # a measurement line of the 501st run, in the file's third MiB
    assert lines[bad - 1].startswith('{"kind": "measurement"')
    lines[bad - 1] = lines[bad - 1].replace('"value": ', '"value": "fast", "was": ')
    path = tmp_path / "night.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    assert path.stat().st_size > 2 << 20
    sink = Sink()
    result = import_files([(str(path), "night.jsonl")], OPTS, sink, db=any_db)
    assert result.exit_code == 2 and result.runs == []
    assert result.failed_files == [{"file": "night.jsonl",
                                    "error": f"line {bad}: measurement value 'fast' is not a number"}]
    assert sink.events[-1] == ("failed", "night.jsonl", f"line {bad}: measurement value 'fast' is not a number")
    assert _runs(any_db) == []


@pytest.mark.parametrize("error", [ClusterbenchError("Permission denied"), MemoryError()], ids=["unreadable", "other"])
def test_a_digest_hashed_early_is_hashed_once_and_raises_in_the_thread_that_asks(monkeypatch, error):
    from clusterbench.ingest import load

    calls: list[str] = []

    def hashed(path):
        calls.append(path)
        if path == "bad":
            raise error
        return f"digest of {path}"

    monkeypatch.setattr(load, "file_digest", hashed)
    good = load._FileDigest("good")
    good.early()
    good.early()
    assert good.get() == good.get() == "digest of good"
    bad = load._FileDigest("bad")
    bad.early()
    for _ in range(2):
        with pytest.raises(type(error)):
            bad.get()
    assert calls == ["good", "bad"]
    late = load._FileDigest("late")   # never started early: hashed when first asked for
    assert late.get() == "digest of late" and calls[-1] == "late"
