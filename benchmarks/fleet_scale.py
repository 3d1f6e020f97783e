"""Fleet scale: the fleet commands on a store of 1k, 10k and 100k nightly runs, each command's wall
time and peak memory, and how they grow with the store (issue 35).

The store is what a fleet checked nightly accumulates: 1 run per host per night (1,000 hosts:
1k runs is one night, 100k runs a hundred), each run clusterbench's JSON lines of an 8-GPU node
(all_reduce and all_gather from 1 MiB to 8 GiB, in and out of place; BabelStream's five kernels
on every GPU; bf16 and fp8 GEMM on every GPU; 418 measurements with ``host`` params, about 30 KB
a run once stored), imported night by night with ``clusterbench import``. One host in a hundred
loses 12% of its busbw from the 40th night on, and one in two hundred one GPU's memory bandwidth,
so ``trend`` has changes to find.

Every command runs as a child process: wall time and peak RSS (``getrusage`` of that child). Each
is followed at once by its peer, the least work any tool must do for the same answer, also a child
process: a plain query of the same tables through the engine's Python client (``sqlite3`` or
psycopg) with one ``json.dumps`` per row it reads (``PEER_SQL``), a plain ``json.loads`` loop over
the night's file for ``import``, and a static HTTP server holding the same body for a
``serve-metrics`` scrape; the ratio clusterbench / peer is printed beside each figure.
``serve-metrics`` is started once per size, left to read the store, and then scraped over HTTP.
The growth exponent between two sizes is log(t2 / t1) / log(n2 / n1): 1 is linear in the store,
0 is a command whose work the store's size does not change. ``--src`` measures another checkout
of clusterbench (its ``src`` directory) with the same store builder and commands: the figures
before and after a change side by side. Options only the newer clusterbench has are left out for
an older one (see ``COMMANDS``).

    python benchmarks/fleet_scale.py --sizes 1000,10000,100000
    python benchmarks/fleet_scale.py --sizes 1000,10000 --src /tmp/main/src --json-out before.json
    python benchmarks/fleet_scale.py --postgresql --sizes 1000,10000,100000   # a throwaway server
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTS = 1000
START = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)   # set by main(): the store's last night is last night
SIZES = [1 << s for s in range(20, 34)]           # 1 MiB .. 8 GiB
OPS = {"all_reduce": (1.75, "sum", 360.0), "all_gather": (0.875, "none", 330.0)}   # bus factor, redop, peak busbw
KERNELS = {"Copy": (2, 3050.0), "Mul": (2, 3040.0), "Add": (3, 3110.0), "Triad": (3, 3100.0), "Dot": (2, 2980.0)}
GEMMS = {"bf16": 760.0, "fp8_e4m3": 1420.0}
DEVICES = 8
ARRAY = 1 << 28
DEGRADED_FROM = 40     # the night the degraded hosts' busbw steps down


def host_name(h: int) -> str:
    return f"gpu{h:04d}"


def _line(run: int, benchmark: str, metric: str, value: float, unit: str, params: dict) -> str:
    # the key order and separators clusterbench's --json prints (report/jsonl.py)
    return json.dumps({"kind": "measurement", "run": run, "benchmark": benchmark, "metric": metric,
                       "value": value, "unit": unit, "params": params})


def run_lines(rng: random.Random, run: int, night: int, h: int) -> Iterator[str]:
    """One host's nightly run as clusterbench prints it with --json: its measurements, then the run."""
    host = host_name(h)
    slow = 0.88 if h % 100 == 7 and night >= DEGRADED_FROM else 1.0
    bad_gpu = 3 if h % 200 == 11 and night >= DEGRADED_FROM else -1
    for op, (factor, redop, peak) in OPS.items():
        total = 0.0
        for size in SIZES:
            busbw = peak * size / (size + (64 << 20)) * (1 + rng.gauss(0, 0.01)) * slow
            algbw = busbw / factor
            time_us = size / algbw / 1e3
            for placement in ("out", "in"):
                params = {"bytes": size, "count": size // 4, "dtype": "float", "redop": redop, "root": -1,
                          "placement": placement, "ranks": DEVICES, "host": host}
                yield _line(run, op, "time_us", round(time_us, 1), "us", params)
                yield _line(run, op, "algbw", round(algbw, 2), "GB/s", params)
                yield _line(run, op, "busbw", round(busbw, 2), "GB/s", params)
                yield _line(run, op, "wrong", 0, "", params)
                total += busbw
        yield _line(run, op, "avg_busbw", round(total / (2 * len(SIZES)), 4), "GB/s", {"ranks": DEVICES, "host": host})
    for device in range(DEVICES):
        for kernel, (arrays, peak) in KERNELS.items():
            bw = peak * (1 + rng.gauss(0, 0.008)) * (0.85 if device == bad_gpu else 1.0)
            base = {"kernel": kernel, "array_size": ARRAY, "dtype": "double", "device": str(device), "host": host}
            yield _line(run, "stream", "bandwidth", round(bw, 3), "GB/s", base)
            t = arrays * 8 * ARRAY / bw / 1e3
            for stat, f in (("min", 1.0), ("max", 1.04), ("avg", 1.01)):
                yield _line(run, "stream", "time_us", round(t * f, 2), "us", {**base, "stat": stat})
        for dtype, peak in GEMMS.items():
            tf = peak * (1 + rng.gauss(0, 0.01))
            params = {"m": 8192, "n": 8192, "k": 8192, "batch": 1, "dtype": dtype, "transA": "N", "transB": "T",
                      "device": str(device), "host": host}
            yield _line(run, "gemm", "tflops", round(tf, 2), "TFLOP/s", params)
            yield _line(run, "gemm", "time_us", round(2 * 8192 ** 3 / tf / 1e6, 2), "us", params)
    started = START + timedelta(days=night, seconds=7 * h)
    record = {"kind": "run", "id": run, "benchmark": "run", "source": "clusterbench",
              "command": ["clusterbench", "run", "--tag", "fleet=prod"],
              "started_at": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
              "ended_at": (started + timedelta(seconds=300)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
              "status": "complete", "hosts": [host], "ranks": DEVICES,
              "devices": ["NVIDIA H100 80GB HBM3"] * DEVICES,
              "versions": {"clusterbench": "0.1.0", "torch": "2.5.1+cu124", "nccl": "2.21.5", "cuda": "12.4",
                           "driver": "550.90.07"},
              "env": {"NCCL_IB_HCA": "mlx5", "NCCL_SOCKET_IFNAME": "eth0", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
              "tags": {"fleet": "prod", "node": host}, "errors": [], "meta": {"suite": [
                  {"step": "collectives", "status": "done", "failures": [], "skipped": []},
                  {"step": "memory bandwidth (stream)", "status": "done", "failures": [], "skipped": []},
                  {"step": "gemm", "status": "done", "failures": [], "skipped": []}]}}
    yield json.dumps(record)


def write_night(path: Path, night: int, first_id: int, hosts: int, shared_id: bool = False) -> int:
    """The JSON lines of one night of ``hosts`` runs; with ``shared_id`` every run prints run 1, as
    fresh pods, each with a database of its own, do."""
    rng = random.Random(night)
    with path.open("w") as f:
        for h in range(hosts):
            run = 1 if shared_id else first_id + h
            f.write("\n".join(run_lines(rng, run, night, h)) + "\n")
    return hosts


# -- measuring ----------------------------------------------------------------------------------

def child_env(src: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(src), CLUSTERBENCH_DEBUG="")
    env.pop("CLUSTERBENCH_DB", None)
    return env


def measure(argv: list[str], env: dict[str, str], out: Path | None = None, timeout: float = 900) -> dict:
    """Wall time, peak RSS (MB) and exit status of ``argv`` as a child process; its stdout to ``out``."""
    t0 = time.perf_counter()
    # stderr to a file, not a pipe: a command's notes (baseline's "left out run ..." lines for a
    # fleet's degraded hosts) fill a pipe's 64 KiB and block it while nobody reads until it ends
    with (out.open("w") if out else open(os.devnull, "w")) as sink, tempfile.TemporaryFile("w+") as errf:
        p = subprocess.Popen(argv, stdout=sink, stderr=errf, env=env, text=True)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.02)
        errf.seek(0)
        err = errf.read()
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    return {"wall_s": round(wall, 3), "rss_mb": round(usage.ru_maxrss / 1024, 1), "rc": rc,
            "error": err.strip().splitlines()[-1][:300] if rc and err.strip() else ""}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url: str, timeout: float = 30) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = r.read()
    return time.perf_counter() - t0, body


def serve_metrics(cb: list[str], db: str, env: dict[str, str], ready_s: float = 900) -> dict:
    """Start serve-metrics, wait until a scrape says the store was read, then scrape it 5 times."""
    port = free_port()
    p = subprocess.Popen([*cb, "serve-metrics", "--port", str(port), "--db", db], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/metrics"
    t0 = time.perf_counter()
    result: dict = {}
    try:
        first = None
        while time.perf_counter() - t0 < ready_s:
            if p.poll() is not None:
                return {"error": f"exited {p.returncode}: {(p.stderr.read() if p.stderr else '').strip()[-300:]}"}
            try:
                dt, body = scrape(url, timeout=ready_s)
            except OSError:
                time.sleep(0.2)
                continue
            first = first if first is not None else dt
            if re.search(rb"^clusterbench_export_success 1", body, re.M):   # the sample, not its HELP line
                break
            time.sleep(0.2)
        else:
            return {"error": f"no successful scrape within {ready_s:.0f} s"}
        result["ready_s"] = round(time.perf_counter() - t0, 2)
        result["first_answer_s"] = round(first or 0.0, 3)
        # the peer: a static server holding the same body, scraped in turn with serve-metrics
        _, body = scrape(url)
        static = Path(tempfile.mkdtemp(prefix="cbscrape-"))
        (static / "metrics").write_bytes(body)
        sport = free_port()
        peer = subprocess.Popen([sys.executable, "-m", "http.server", str(sport), "--bind", "127.0.0.1",
                                 "--directory", str(static)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            surl = f"http://127.0.0.1:{sport}/metrics"
            deadline = time.monotonic() + 30
            while True:
                try:
                    scrape(surl)
                    break
                except OSError:
                    if time.monotonic() > deadline or peer.poll() is not None:
                        raise SystemExit("the static peer server did not start") from None
                    time.sleep(0.1)
            times, peers = [], []
            for _ in range(5):
                dt, body = scrape(url)
                times.append(dt)
                peers.append(scrape(surl)[0])
        finally:
            peer.terminate()
            peer.wait()
            shutil.rmtree(static, ignore_errors=True)
        result["scrape_s"] = round(sorted(times)[2], 4)
        result["scrape_max_s"] = round(max(times), 4)
        result["peer_scrape_s"] = round(sorted(peers)[2], 4)
        result["ratio"] = ratio(result["scrape_s"], result["peer_scrape_s"])
        result["bytes"] = len(body)
        result["samples"] = sum(1 for ln in body.decode().splitlines() if ln and not ln.startswith("#"))
        with open(f"/proc/{p.pid}/status") as f:
            hwm = next(ln for ln in f if ln.startswith("VmHWM"))
        result["rss_mb"] = round(int(hwm.split()[1]) / 1024, 1)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return result


# -- PostgreSQL ---------------------------------------------------------------------------------

class Postgres:
    """A throwaway server, as tests/helpers/pg_fixtures.py starts one (initdb as the postgres user,
    trust authentication, fsync off), with buffers sized for a store of gigabytes."""

    def __init__(self) -> None:
        import glob
        import pwd

        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
        if not found:
            raise SystemExit("PostgreSQL server not installed")
        self.bin = Path(found[-1]).parent
        self.dir = Path(tempfile.mkdtemp(prefix="cbfleetpg-"))
        pw = pwd.getpwnam("postgres")
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.port = free_port()
        self._as_postgres(str(self.bin / "initdb"), "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres",
                          "-E", "UTF8", "--locale=C", "--no-sync")
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=512MB -c work_mem=64MB")
        self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-l", str(self.dir / "log"),
                          "-w", "-t", "60", "-o", opts, "start")
        self.n = 0

    def _as_postgres(self, *argv: str) -> None:
        r = subprocess.run(["runuser", "-u", "postgres", "--", *argv], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        if r.returncode:
            raise SystemExit(f"{argv[0]} failed: {r.stderr.strip()}")

    def new_db(self) -> str:
        self.n += 1
        name = f"fleet{self.n}"
        self._as_postgres(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"),
                        "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


# -- the commands -------------------------------------------------------------------------------

def commands(newer: bool, first: int, last: int, nights: int, tmp: Path) -> list[tuple[str, list[str]]]:
    """(name, argv after ``clusterbench``) of each command measured; ``first``..``last``: the ids of the
    newest night's runs (1k runs), the night before them the runs ``compare`` sets against them."""
    night = f"{first}-{last}"
    prev = f"{first - HOSTS}-{last - HOSTS}" if nights > 1 else None
    out = [
        ("trend", ["trend"]),
        ("export openmetrics", ["export", "openmetrics"]),
        ("results list --limit 1000000 --json", ["results", "list", "--limit", "1000000", "--json"]),
        ("results export 1k runs (JSON lines)", ["results", "export", night]),
        ("results export 1k runs --csv", ["results", "export", night, "--csv"]),
        ("baseline create over 1k runs", ["baseline", "create", night, "-o", str(tmp / "baseline.yaml")]),
        ("validate 1k runs", ["validate", night, "--profile", str(tmp / "baseline.yaml")]),
        ("report over 1k runs", ["report", night, "-o", str(tmp / "report.html")]),
    ]
    if prev:
        out.append(("compare 1k runs with 1k runs", ["compare", prev, night]))
    if newer:
        out.insert(1, ("trend --json", ["trend", "--json"]))
        out.insert(3, ("export openmetrics --all --window 2d",
                       ["export", "openmetrics", "--all", "--window", "2d"]))
    return out


def view_queries(db: str, postgres: bool) -> list[tuple[str, list[str]]]:
    """The measurements view through the engines' own clients, as an operator's tool would ask."""
    qs = [("view: count of busbw records", "SELECT count(*) FROM measurements WHERE metric = 'busbw'"),
          ("view: one node's busbw history", "SELECT started_at, benchmark, value FROM measurements "
                                              "WHERE host = 'gpu0007' AND metric = 'busbw' ORDER BY started_at"),
          ("headlines: one node's busbw history", "SELECT started_at, benchmark, value FROM headline_measurements "
                                                   "WHERE host = 'gpu0007' AND metric = 'busbw' ORDER BY started_at")]
    if postgres:
        return [(n, ["psql", db, "-At", "-c", q]) for n, q in qs]
    return [(n, ["sqlite3", db, q]) for n, q in qs]


# The peers: what the command must read, asked in plain SQL, each row written as JSON. {a} and {b}
# are the newest night's first and last run ids.
PEER_SQL = {
    # trend: each headline series' newest 60 values (its default --window)
    "trend": "SELECT series_id, started, value FROM (SELECT series_id, started, value, row_number() OVER "
             "(PARTITION BY series_id ORDER BY started DESC) AS rn FROM headlines) AS w WHERE rn <= 60 "
             "ORDER BY series_id, started",
    # export openmetrics: each headline series' newest value
    "export openmetrics": "SELECT s.host, s.benchmark, s.metric, s.unit, s.params, h.value, h.started "
                          "FROM series s JOIN headlines h ON h.series_id = s.id "
                          "WHERE h.started = (SELECT max(started) FROM headlines WHERE series_id = s.id)",
    "results list --limit 1000000 --json": "SELECT * FROM runs ORDER BY id DESC",
    # a run's measurements are its packs: read and decoded, every record written
    "results export 1k runs (JSON lines)": "SELECT run_id, body FROM measurement_packs "
                                           "WHERE run_id BETWEEN {a} AND {b} ORDER BY run_id, id",
}
# commands whose peer is another's: what they must read is the 1k runs' measurements
PEER_OF = {"results export 1k runs --csv": "results export 1k runs (JSON lines)",
           "baseline create over 1k runs": "results export 1k runs (JSON lines)",
           "validate 1k runs": "results export 1k runs (JSON lines)",
           "report over 1k runs": "results export 1k runs (JSON lines)"}

PEER = r"""
import json, sys
db, sql = sys.argv[1], sys.argv[2]
if db.startswith("postgresql://"):
    import psycopg
    con = psycopg.connect(db)
    cur = con.cursor(name="peer")   # server-side: rows as they come, as a careful tool would read them
    cur.itersize = 2000
    cur.execute(sql)
else:
    import sqlite3
    cur = sqlite3.connect(db).execute(sql)
out = sys.stdout
for row in cur:
    if len(row) == 2 and isinstance(row[1], str) and row[1][:1] == "{":
        try:
            doc = json.loads(row[1])
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("r"), list):
            for rec in doc["r"]:
                out.write(json.dumps([row[0], rec]) + "\n")
            continue
    out.write(json.dumps(list(row), default=str) + "\n")
"""

JSON_LOOP = "import json, sys\nfor line in open(sys.argv[1]):\n    json.loads(line)\n"


def peer_argv(db: str, sql: str) -> list[str]:
    return [sys.executable, "-c", PEER, db, sql]


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def exponent(a: tuple[int, float], b: tuple[int, float]) -> float | None:
    if a[1] <= 0 or b[1] <= 0 or a[0] == b[0]:
        return None
    return math.log(b[1] / a[1]) / math.log(b[0] / a[0])


def main() -> int:
    global HOSTS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="store sizes in runs (multiples of --hosts)")
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the clusterbench src directory to measure")
    ap.add_argument("--postgresql", action="store_true", help="store in a throwaway PostgreSQL server")
    ap.add_argument("--workdir", type=Path, default=None, help="where the store and night files go (default /tmp)")
    ap.add_argument("--shared-id-runs", type=int, default=8000,
                    help="also import this many runs that all print run 1, against as many with their own ids")
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args()
    HOSTS = args.hosts
    sizes = sorted(int(s) for s in args.sizes.split(","))
    global START
    # the newest night is last night: --window and --since see the store as a fleet's own
    nights = -(-max(sizes) // HOSTS)
    START = (datetime.now(timezone.utc) - timedelta(days=nights)).replace(hour=3, minute=0, second=0, microsecond=0)
    env = child_env(args.src.resolve())
    # bytecode first, as an installed copy has it: a checkout run with PYTHONDONTWRITEBYTECODE would
    # compile every module at each start (benchmarks/import_speed.py does the same)
    compileall.compile_dir(str(args.src / "clusterbench"), quiet=1)
    cb = [sys.executable, "-m", "clusterbench"]
    newer = (args.src / "clusterbench" / "store" / "fleet.py").exists()
    work = Path(tempfile.mkdtemp(prefix="cbfleet-", dir=args.workdir))
    pg = Postgres() if args.postgresql else None
    results: dict = {"src": str(args.src), "postgresql": bool(pg), "hosts": HOSTS, "sizes": {},
                     "load_before": os.getloadavg()}
    try:
        db = pg.new_db() if pg else str(work / "fleet.db")
        stored, night, imports = 0, 0, []
        for size in sizes:
            while stored < size:
                f = work / f"night{night:03d}.jsonl"
                n = write_night(f, night, stored + 1, HOSTS)
                r = measure([*cb, "import", str(f), "--db", db], env, timeout=3600)
                if r["rc"]:
                    raise SystemExit(f"import of night {night} failed: {r['error']}")
                r["runs_per_s"] = round(n / r["wall_s"], 1)
                r["mb_per_s"] = round(f.stat().st_size / 1e6 / r["wall_s"], 1)
                # every fifth night the peer reads the same file right after: a plain json.loads loop
                if night % 5 == 0:
                    p = measure([sys.executable, "-c", JSON_LOOP, str(f)], env)
                    r["peer_s"] = p["wall_s"]
                    r["ratio"] = ratio(r["wall_s"], p["wall_s"])
                f.unlink()
                imports.append(r)
                stored += n
                night += 1
                print(f"# night {night}: {n} runs imported in {r['wall_s']} s ({r['runs_per_s']} runs/s, "
                      f"{r['mb_per_s']} MB/s), RSS {r['rss_mb']} MB"
                      + (f"; json.loads loop {r['peer_s']} s, ratio {r['ratio']}" if "peer_s" in r else ""),
                      flush=True)
            last = imports[-10:]
            ratios = sorted(i["ratio"] for i in imports if i.get("ratio"))
            row: dict = {"import_runs_per_s": sorted(i["runs_per_s"] for i in last)[len(last) // 2],
                         "import_mb_per_s": sorted(i["mb_per_s"] for i in last)[len(last) // 2],
                         "import_rss_mb": max(i["rss_mb"] for i in last),
                         "import_ratio_to_json_loop": ratios[len(ratios) // 2] if ratios else None}
            if not pg:
                row["db_bytes_per_run"] = round(sum(p.stat().st_size for p in work.glob("fleet.db*")) / stored)
            tmp = work / "out"
            tmp.mkdir(exist_ok=True)
            for name, argv in commands(newer, stored - HOSTS + 1, stored, night, tmp):
                r = measure([*cb, *argv, "--db", db], env, out=tmp / "stdout")
                r["out_bytes"] = (tmp / "stdout").stat().st_size
                sql = PEER_SQL.get(name) if newer else None
                if sql:
                    p = measure(peer_argv(db, sql.format(a=stored - HOSTS + 1, b=stored)), env, out=tmp / "stdout")
                    if p["rc"]:
                        raise SystemExit(f"the peer of {name} failed: {p['error']}")
                    r["peer"] = {"wall_s": p["wall_s"], "rss_mb": p["rss_mb"],
                                 "out_bytes": (tmp / "stdout").stat().st_size}
                elif newer and name in PEER_OF:
                    r["peer"] = dict(row[PEER_OF[name]]["peer"], of=PEER_OF[name])
                if "peer" in r:
                    r["ratio"] = ratio(r["wall_s"], r["peer"]["wall_s"])
                    r["rss_ratio"] = ratio(r["rss_mb"], r["peer"]["rss_mb"])
                row[name] = r
                print(f"{size:>7} runs  {name:<40} {r['wall_s']:>8.2f} s {r['rss_mb']:>8.1f} MB"
                      + (f"  peer {r['peer']['wall_s']:>7.2f} s {r['peer']['rss_mb']:>6.1f} MB  ratio {r['ratio']}"
                         if "peer" in r else "")
                      + (f"  exit {r['rc']}: {r['error']}" if r["rc"] else ""), flush=True)
            if newer:
                for name, argv in view_queries(db, bool(pg)):
                    r = measure(argv, env, out=tmp / "stdout")
                    row[name] = r
                    print(f"{size:>7} runs  {name:<40} {r['wall_s']:>8.2f} s", flush=True)
            sm = serve_metrics(cb, db, env)
            row["serve-metrics"] = sm
            print(f"{size:>7} runs  serve-metrics {json.dumps(sm)}", flush=True)
            print(f"# load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
            results["sizes"][size] = row
        if args.shared_id_runs:
            per = {}
            for shared in (False, True):
                dbx = pg.new_db() if pg else str(work / f"ids{int(shared)}.db")
                f = work / "ids.jsonl"
                write_night(f, 0, 1, args.shared_id_runs, shared_id=shared)
                r = measure([*cb, "import", str(f), "--db", dbx], env, timeout=7200)
                f.unlink()
                r["runs_per_s"] = round(args.shared_id_runs / r["wall_s"], 1)
                per["shared run id" if shared else "own run ids"] = r
                print(f"# {args.shared_id_runs} runs, {'all run 1' if shared else 'own ids'}: {r['wall_s']} s "
                      f"({r['runs_per_s']} runs/s)", flush=True)
            results["shared_ids"] = per
    finally:
        if pg:
            pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    results["load_after"] = os.getloadavg()
    # growth exponents between consecutive sizes
    names = sorted({k for row in results["sizes"].values() for k, v in row.items() if isinstance(v, dict)})
    print("\n# growth exponent of wall time (log t2/t1 / log n2/n1)")
    for name in names:
        pts = [(n, row[name].get("wall_s") or row[name].get("scrape_s") or 0.0)
               for n, row in results["sizes"].items() if name in row]
        exps = [exponent(a, b) for a, b in zip(pts, pts[1:])]
        text = ", ".join("-" if e is None else f"{e:.2f}" for e in exps)
        print(f"{name:<45} {text}")
        results.setdefault("exponents", {})[name] = exps
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
