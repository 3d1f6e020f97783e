"""System tests (import entry points): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import pytest
from import_sources import (
    BOM,
    _progress,
    _same,
    by_file,
)
from tool_logs import LOGS

from clusterbench.ingest import nccl_parallel

NCCL = [p for p in LOGS if p.parent.name == "nccl-tests"]


@pytest.mark.parametrize("path", NCCL[::3], ids=lambda p: p.name)
def test_processes_read_every_form_alike(tmp_path, monkeypatch, path):
    # the first part is read by a worker from the file itself: a byte order mark there was read
    # as the start of the first line
    monkeypatch.setattr(nccl_parallel, "PART_BYTES", 2048)
    monkeypatch.setattr(nccl_parallel, "MIN_BYTES", 0)
    data = path.read_bytes() * 6
    plain = by_file(tmp_path, data, path.name)
    for label, form, want in (("plain", data, plain), ("a BOM", BOM + data, plain),
                              ("progress", _progress(data, 5), plain),
                              ("CRLF", data.replace(b"\n", b"\r\n"), plain),
                              # at a line's start it is no part of the log: the second
                              # copy's header was hidden by it
                              ("a BOM in the middle", data + BOM + data, by_file(tmp_path, data + data, path.name))):
        _same(want, by_file(tmp_path, form, path.name, jobs=2), f"{label}, 2 processes")
