"""Tests of clusterbench.ingest.nccl_parallel."""

from __future__ import annotations

import re

from parallel_import import _runs, _texts, _write

from clusterbench.ingest import nccl_parallel, workers


def test_cuts_start_at_a_run(tmp_path):
    texts = _texts()
    path = _write(tmp_path, [texts[i % len(texts)] for i in range(300)])
    data = path.read_bytes()
    parts = nccl_parallel.parts(str(path), len(data), part=100_000)
    assert parts[0].start == 0 and parts[-1].end == len(data) and parts[-1].next_kind == ""
    for before, after in zip(parts, parts[1:]):
        assert before.end == after.start and data[after.start - 1:after.start] == b"\n"
        line = data[after.start:data.index(b"\n", after.start)]
        assert (before.next_kind == "command") == bool(re.search(rb"_perf\b", line)) and not line.startswith(b" ")
        if before.next_kind == "header":
            assert line.startswith(b"# nThread")


def test_a_file_with_nowhere_to_cut_is_read_in_one_pass(tmp_path, small_parts, monkeypatch):
    # runs without the header lines a cut needs (a command line names each op): no worker is
    # started, and the runs are the same
    text = "".join(ln for ln in _texts()[1].splitlines(keepends=True) if "nThread" not in ln)
    path = _write(tmp_path, [text] * 60)
    assert len(nccl_parallel.parts(str(path), path.stat().st_size)) == 1

    def no_worker(*_a, **_k):
        raise AssertionError("a worker was started")

    one = _runs(path, 1)
    monkeypatch.setattr(workers.multiprocessing, "get_context", no_worker)
    assert _runs(path, 2) == one and len(one) == 60
