"""System tests (transfer): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json

import pytest
from bench_cli import cli

from clusterbench.cli import main


def test_cli_cpu_default_matrix_and_config(capsys, db):
    code, out, err = cli(capsys, "transfer", "--bytes", "256K", "--iterations", "2", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    stats = {r["params"]["stat"] for r in rows}
    assert stats == {"pair", "row_total", "average"}
    pair = next(r for r in rows if r["params"]["stat"] == "pair")
    assert pair["params"] == {"src": "C0", "dst": "C0", "direction": "uni", "method": "CPU",
                              "bytes": 262144, "test": "h2h", "host_memory": "pageable", "stat": "pair"}
    code, out, err = cli(capsys, "transfer", "--config", "example", "--test", "C0->C0 N->C0->C0",
                         "--bytes", "64K", "--iterations", "2", "--db", db)
    assert code == 0, err
    assert "# skipped Broadcast from GPU 0 to GPU 0 and GPU 1" in out
    assert '# "Read-only" by CPU 0' in out and "Transfer 01" in out
    # the example's 5th test keeps its place in the file on a host that skips the GPU tests
    # before it (it was numbered 1 here and 5 on a GPU host: the same test, two keys); the
    # --test after the file's six is 7
    assert '# "Read-only" by CPU 0\n# test 5\n' in out and "# test 7" in out


def test_a_config_tests_index_is_its_place_in_the_file_on_any_host(capsys, db, tmp_path):
    cfg = tmp_path / "t.cfg"
    cfg.write_text("# on GPUs\nG0->G1->G1\n# first on CPU\nC0->C0->C0\n# on GPU 5\nG5->G5->G5\n"
                   "# second on CPU\nC0->C0->C0\n")
    code, out, err = cli(capsys, "transfer", "--config", str(cfg), "--bytes", "64K", "--iterations", "2",
                         "--json", "--db", db)
    if __import__("torch").cuda.device_count() > 5:
        pytest.skip("this host has the GPUs the file names")
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {(r["params"]["test"], r["params"]["test_index"]) for r in rows} == {
        ("first on CPU", 2), ("second on CPU", 4)}


def test_transfer_json_bandwidth_is_bytes_over_time_and_the_table_shows_it(tmp_path, capsys):
    import json

    with pytest.raises(SystemExit) as exc:
        main(["transfer", "--test", "C0->C0@8K", "--iterations", "2", "--warmups", "0", "--json", "-q",
              "--db", str(tmp_path / "t.db")])
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines()]
    assert exc.value.code == 0
    bw = [line for line in lines if line["kind"] == "measurement" and line["params"]["stat"] == "pair"]
    assert len(bw) == 1 and bw[0]["unit"] == "GB/s" and bw[0]["params"]["bytes"] == 8192
    assert bw[0]["params"]["test_index"] == 1 and bw[0]["value"] > 0
