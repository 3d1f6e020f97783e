"""System tests (import parallel): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from parallel_import import FAILED, _key, _runs, _texts, _write
from paths import DATA

from clusterbench.ingest import LogFormatError, iter_runs, nccl_parallel

NCCL = DATA / "nccl-tests"


# a run that died before its table, and a failure after a run's footer
DIED = "$ mpirun -np 8 ./build/all_gather_perf -b 8 -e 8G\nnode1: Test NCCL failure common.cu:1005 'unhandled cuda error'\n"


def _assert_same(path: Path) -> list:
    one = _runs(path, 1)
    assert len(nccl_parallel.parts(str(path), path.stat().st_size)) > 4
    assert _runs(path, 2) == one
    assert _runs(path, 3) == one
    return one


def _prepared(path: Path, jobs: int, prepare) -> list:
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return list(iter_runs(f, name="big.log", jobs=jobs, path=str(path), prepare=prepare))


def _key_and_pid(r):
    import os
    return _key(r), os.getpid()


def test_concatenated_logs_give_the_same_runs(tmp_path, small_parts):
    texts = _texts()
    one = _assert_same(_write(tmp_path, [texts[i % len(texts)] for i in range(400)]))
    assert len(one) == 400 and {d["status"] for d, _ in one} == {"complete"}


def test_states_that_carry_over_a_cut_are_read_in_the_main_process(tmp_path, small_parts):
    # A version line before a header names the next run's version; a run that died before its
    # table ends where the next begins: a cut there must lose neither.
    texts, rng = _texts(), random.Random(7)
    pieces = []
    for _ in range(300):
        extra = rng.choice(["", "", "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903\n", DIED,
                            "gpu-node-01:4242:4242 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Init COMPLETE\n"])
        pieces.append(extra + texts[rng.randrange(len(texts))] + (FAILED if rng.random() < 0.1 else ""))
    one = _assert_same(_write(tmp_path, pieces))
    assert any(d["status"] == "failed" for d, _ in one)


def test_another_tools_output_in_a_later_part(tmp_path, small_parts):
    texts = _texts()
    stream = (DATA / "babelstream" / "repo-results-v3.3-titanxp-cuda.txt").read_text()
    path = _write(tmp_path, [texts[i % len(texts)] for i in range(120)] + [stream])
    one = _assert_same(path)
    assert one[-1][0]["meta"]["tool"] == "babelstream"


def test_a_markup_role_open_across_a_cut(tmp_path, small_parts):
    # a document's role wrapped over a run's header line: a cut there would split the role
    texts = _texts()
    text = "".join(texts[i % len(texts)] for i in range(200))
    headers = [m.start() for m in re.finditer(r"^# nThread", text, re.M)]
    for at in reversed(headers[5::7]):
        end = text.index("\n", at) + 1
        text = text[:at] + ":mark:`a role\n" + text[at:end] + "wrapped`\n" + text[end:]
    path = _write(tmp_path, [text])
    _assert_same(path)


def test_a_worker_that_dies_leaves_the_rest_to_the_main_process(tmp_path, small_parts, monkeypatch):
    texts = _texts()
    path = _write(tmp_path, [texts[i % len(texts)] for i in range(200)])
    one = _runs(path, 1)
    real = nccl_parallel._read
    calls = []

    def dying(parser, text, cleaner, next_kind, *prepare):
        calls.append(1)
        if len(calls) == 3:   # in a worker: its third part
            import os
            os._exit(9)
        return real(parser, text, cleaner, next_kind, *prepare)

    monkeypatch.setattr(nccl_parallel, "_read", dying)
    assert _runs(path, 2) == one


def test_a_table_no_line_names_is_refused_at_its_place(tmp_path, small_parts):
    texts = _texts()
    unnamed = (NCCL / "superbench-nccl_alltoall.log").read_text()   # no command line: several ops fit
    path = _write(tmp_path, [texts[i % 2 + 1] for i in range(150)] + [unnamed] + [texts[1]] * 50)
    with pytest.raises(LogFormatError, match="does not say which collective") as one:
        _runs(path, 1)
    with pytest.raises(LogFormatError, match="does not say which collective") as two:
        _runs(path, 2)
    assert str(one.value) == str(two.value)


def test_prepare_runs_where_each_run_is_parsed_with_the_same_results(tmp_path, small_parts):
    # what a caller makes of each run (import --dry-run: the lines it prints) is made in the
    # worker that parsed it, so only that crosses back; the results are those of one pass,
    # in order, states carried over cuts included
    import os

    texts, rng = _texts(), random.Random(11)
    pieces = [rng.choice(["", DIED]) + texts[rng.randrange(len(texts))] + (FAILED if rng.random() < 0.1 else "")
              for _ in range(250)]
    path = _write(tmp_path, pieces)
    one = _runs(path, 1)
    for jobs in (1, 2, 3):
        got = _prepared(path, jobs, _key_and_pid)
        assert [key for key, _ in got] == one
        pids = {pid for _, pid in got}
        assert (pids == {os.getpid()}) == (jobs == 1) and len(pids) <= jobs + 1, pids


def test_an_error_prepare_raises_comes_after_the_runs_before_it(tmp_path, small_parts):
    # raised in a worker or in the main process, as one pass raises it: after the runs before
    texts = _texts()
    path = _write(tmp_path, [texts[i % len(texts)] + (FAILED if i == 150 else "") for i in range(200)])
    assert [d["status"] for d, _ in _runs(path, 1)].index("failed") == 150

    def refusing(kind):
        def prepare(r):
            if r.run.status == "failed":
                raise kind("a failed run is refused")
            return r.run.status
        return prepare

    for kind, match in ((LogFormatError, "failed run is refused"), (ValueError, "importer failed on it")):
        for jobs in (1, 2):
            got = []
            with pytest.raises(LogFormatError, match=match), open(path, encoding="utf-8", newline="") as f:
                for value in iter_runs(f, name="big.log", jobs=jobs, path=str(path), prepare=refusing(kind)):
                    got.append(value)
            assert got == ["complete"] * 150, (kind, jobs)


def test_a_sigkill_of_the_import_ends_its_parse_workers(tmp_path):
    # SIGKILL to `import` of a large log left its --jobs workers parsing under init, holding the
    # log open (seen 44 minutes later): each asks the kernel to end it with its parent
    from process_helpers import assert_a_sigkilled_import_ends_its_workers

    big = tmp_path / "big.log"
    text = "".join(_texts())
    with big.open("w") as f:
        while f.tell() < nccl_parallel.MIN_BYTES * 3:   # many parts: the workers parse for a while
            f.write(text)
    assert_a_sigkilled_import_ends_its_workers(str(big), str(tmp_path / "r.db"))


def test_what_the_caller_does_meanwhile_runs_once_the_workers_read(tmp_path, small_parts, monkeypatch):
    from clusterbench.ingest import workers

    texts = _texts()
    path = _write(tmp_path, [texts[i % len(texts)] for i in range(100)])
    events: list[str] = []
    start = workers.start

    def started(*a, **k):
        out = start(*a, **k)
        events.append(f"{len(out)} workers")
        return out

    monkeypatch.setattr(workers, "start", started)
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        runs = list(iter_runs(f, name="big.log", jobs=2, path=str(path), meanwhile=lambda: events.append("meanwhile")))
    assert events == ["2 workers", "meanwhile"] and [_key(r) for r in runs] == _runs(path, 1)
