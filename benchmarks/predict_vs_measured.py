"""Predicted vs measured training steps on the emulated cluster, at several link rates (root only).

For 2 and 3 emulated hosts (network namespaces on a bridge, one rank each), every host's link
shaped with tc tbf to each rate in turn (both directions; `unshaped` leaves the veth as it is),
this measures at each rate, in this order:

1. the nodes: `gemm` at the model's three largest product shapes and `stream`, on every host at
   once (the ranks compute at once, on cores the emulated hosts share);
2. the fabric: `coll all_gather,reduce_scatter,all_reduce` across the hosts;
3. the workloads: `train` (FSDP2 full shard of a 4-layer, width-256 decoder, about 1-3 s a step
   here) and `ddp-comm` (32 MiB of gradients in 8 MiB buckets);

then predicts each workload run's step from the curves and node rates of its own rate alone
(`clusterbench predict SELECTOR --check RUN`) and prints predicted vs measured, the error, the
comm share and the bound, with the machine's load (`uptime`) at each rate. Last, each workload
run at a shaped rate is predicted again from another shaped rate's fabric over ``--link`` its own
rate (the what-if `predict --link` gives), to show how far a measured fabric carries to another
link; ``--what-ifs-of DB`` prints that table again from an earlier run's database.

Each host runs pinned to one core (host i on core i mod cores): with its affinity one core, each
rank computes on one thread, as `train` splits a host's cores between its ranks. Unpinned, two
ranks of two threads each on two shared cores spent most of a step in OpenMP's barriers.

    sudo python benchmarks/predict_vs_measured.py [--rates 100mbit,300mbit,1gbit,unshaped] [--hosts 2,3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "helpers"))

from cluster_fixtures import create_cluster, netns_usable  # noqa: E402

from clusterbench.bench.workloads.model import resolve_shape  # noqa: E402
from clusterbench.judge.predict_runs import stored_prediction  # noqa: E402
from clusterbench.judge.workload import matmuls  # noqa: E402
from clusterbench.units import parse_rate  # noqa: E402

SHAPE = {"layers": 4, "hidden": 256, "heads": 4, "seq": 128, "vocab": 4096}
BATCH = 12
MODEL = [x for k, v in SHAPE.items() for x in (f"--{k}", str(v))]
GLOO = ["--device", "cpu", "--backend", "gloo"]
UNSHAPED = "unshaped"


def load() -> str:
    """The load averages over 1, 5 and 15 minutes, as `uptime` prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Bench:
    def __init__(self, n: int, db: Path, steps: int) -> None:
        self.n, self.db, self.steps, self.round = n, db, steps, 0
        self.c = create_cluster(n)
        cores = len(os.sched_getaffinity(0))
        cases = "\n".join(f"  {h}) core={i % cores};;" for i, h in enumerate(self.c.hosts))
        self.agent = self.c.workdir / "pinned-agent.sh"
        self.agent.write_text(f'#!/bin/sh\n# the emulated host HOST pinned to one core\nhost="$1"\n'
                              f'case "$host" in\n{cases}\nesac\nexec taskset -c "$core" {self.c.agent} "$@"\n')
        self.agent.chmod(0o755)

    def tags(self, rate: str, part: str) -> list[str]:
        """fabric, hosts and round name where a run belongs; part is node, fabric or workload."""
        out = ["--tag", f"fabric={rate}", "--tag", f"hosts={self.n}", "--tag", f"round={self.round}",
               "--tag", f"part={part}"]
        return out + ([] if rate == UNSHAPED else ["--tag", f"link_speed={rate}"])

    def on_all(self, args: list[str], rate: str, part: str, timeout: float = 1800) -> None:
        """A clusterbench command launched with torchrun on every host, one rank each."""
        argv = [sys.executable, "-m", "clusterbench", "launch", "torchrun", "--hosts", ",".join(self.c.hosts),
                "--agent", str(self.agent), "--env", "GLOO_SOCKET_IFNAME=eth0", "--wall-timeout", str(timeout),
                "--", *args, "--db", str(self.db), *self.tags(rate, part)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(args[:2])} failed ({r.returncode}): {r.stderr.strip()[-600:]}")

    def on_each(self, args: list[str], rate: str) -> None:
        """A clusterbench command on every host at once, each its own run of one rank (a
        launcher's environment, so the run names its emulated host)."""
        one = ["env", "RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1",
               "MASTER_PORT=29517"]
        procs = [subprocess.Popen([str(self.agent), h, *one, sys.executable, "-m", "clusterbench", *args, "-q",
                                   "--db", str(self.db), *self.tags(rate, "node")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for h in self.c.hosts]
        for p in procs:
            _, err = p.communicate(timeout=900)
            if p.returncode != 0:
                raise SystemExit(f"{' '.join(args[:2])} failed on a host: {err.strip()[-600:]}")

    def shape_links(self, rate: str) -> None:
        for i in range(self.n):
            self.c.unshape(i)
            if rate != UNSHAPED:
                self.c.shape(i, rate)

    def measure(self, rate: str) -> dict[str, str]:
        """The node, the fabric, the workloads, then the fabric and the node again: the load
        drifts, and what the prediction reads is measured on both sides of what it predicts."""
        self.shape_links(rate)
        before = load()
        t0 = time.time()
        self.node(rate)
        self.fabric(rate)
        self.on_all(["train", *GLOO, *MODEL, "--batch", str(BATCH), "--steps", str(self.steps), "--warmup", "2"],
                    rate, "workload")
        self.on_all(["ddp-comm", *GLOO, "--size", "32M", "--layers", "8", "--bucket-cap-mb", "8",
                     "--steps", "4", "--warmup", "2"], rate, "workload")
        self.fabric(rate)
        self.node(rate)
        return {"load_before": before, "load_after": load(), "seconds": f"{time.time() - t0:.0f}"}

    def node(self, rate: str) -> None:
        """GEMM at the model's three largest product shapes, stream, and the model at one rank's
        batch (the compute of a step, no network), on every host at once."""
        shape = resolve_shape("tiny", **SHAPE)
        for m in sorted(matmuls(shape, BATCH // self.n), key=lambda m: -m.flops)[:3]:
            self.on_each(["gemm", "--device", "cpu", "-m", str(m.m), "-n", str(m.n), "-k", str(m.k),
                          "-i", "10", "--samples", "5"], rate)
        self.on_each(["stream", "--device", "cpu", "--float", "-s", "4M", "-n", "11", "--kernels", "Triad"], rate)
        self.on_each(["train", "--device", "cpu", *MODEL, "--batch", str(BATCH // self.n), "--steps",
                      str(self.steps), "--warmup", "2", "--no-comm-share"], rate)

    def fabric(self, rate: str) -> None:
        self.on_all(["coll", "all_gather,reduce_scatter,all_reduce", "-b", "256K", "-e", "16M", "-f", "2",
                     "-n", "4", "-w", "1", *GLOO], rate, "fabric")

    def close(self) -> None:
        self.c.close()


def predictions(db: Path, n: int, rate: str, round_: int) -> list[dict[str, object]]:
    """Each workload run of (n, rate, round) predicted from the node and fabric runs beside it."""
    sel = f"fabric={rate},hosts={n},round={round_}"
    report = stored_prediction(db, [f"{sel},part=node", f"{sel},part=fabric"], check=[f"{sel},part=workload"])
    out = []
    for c in report.checks:
        p = c.prediction
        out.append({"hosts": n, "rate": rate, "round": round_, "workload": p.workload.kind, "run": c.run.id,
                    "measured_ms": c.measured.step_s * 1e3, "predicted_ms": p.step_s * 1e3, "error": c.error,
                    "compute_ms": p.compute_s * 1e3, "comm_ms": p.comm_s * 1e3,
                    # the same step with the compute from the GEMM rate alone (no one-rank step)
                    "gemm_error": None if p.compute.from_gemm_s is None else
                    (p.step_s - p.compute_s + p.compute.from_gemm_s) / c.measured.step_s - 1,
                    "measured_share": c.measured.comm_share, "predicted_share": p.comm_share,
                    "measured_bound": c.measured.bound, "predicted_bound": p.bound})
    return out


def what_ifs(db: Path, n: int, rates: list[str], round_: int) -> list[dict[str, object]]:
    """Each workload run at a shaped rate predicted from another shaped rate's fabric over
    ``--link`` its own rate (the what-if `predict --link` prints), with its own rate's nodes."""
    out = []
    shaped = [r for r in rates if r != UNSHAPED]
    for to in shaped:
        for frm in shaped:
            if frm == to:
                continue
            sel = f"hosts={n},round={round_}"
            report = stored_prediction(db, [f"fabric={to},{sel},part=node", f"fabric={frm},{sel},part=fabric"],
                                       check=[f"fabric={to},{sel},part=workload"], links=[to])
            # each check's predictions: the measured fabric's, then the --link one's
            for i, c in enumerate(report.checks):
                p = report.predictions[2 * i + 1]
                out.append({"hosts": n, "from": frm, "to": to, "round": round_, "workload": p.workload.kind,
                            "run": c.run.id, "measured_ms": c.measured.step_s * 1e3, "predicted_ms": p.step_s * 1e3,
                            "error": p.step_s / c.measured.step_s - 1, "comm_ms": p.comm_s * 1e3,
                            "measured_comm_ms": None if c.measured.comm_share is None
                            else c.measured.comm_share * c.measured.step_s * 1e3})
    return out


def print_what_ifs(rows: list[dict[str, object]]) -> None:
    print()
    print("| hosts | fabric measured at | predicted at (--link) | round | workload | measured ms | predicted ms "
          "| error | comm ms predicted / measured |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        meas = "-" if r["measured_comm_ms"] is None else f"{r['measured_comm_ms']:.0f}"
        print(f"| {r['hosts']} | {r['from']} | {r['to']} | {r['round']} | {r['workload']} | {r['measured_ms']:.0f} "
              f"| {r['predicted_ms']:.0f} | {_pct(r['error'])} | {r['comm_ms']:.0f} / {meas} |")


def _pct(x: object) -> str:
    return "-" if x is None else f"{100 * float(x):+.1f}%"  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default=f"100mbit,300mbit,1gbit,{UNSHAPED}")
    ap.add_argument("--hosts", default="2,3")
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=2, help="rates in order, then in reverse order, ...")
    ap.add_argument("--db", default=None, help="keep the runs in this database (default: a temporary one)")
    ap.add_argument("--what-ifs-of", type=Path, default=None, metavar="DB",
                    help="measure nothing: print the --link what-ifs of an earlier run's database")
    args = ap.parse_args()
    if args.what_ifs_of:
        rates = args.rates.split(",")
        print_what_ifs([r for n in map(int, args.hosts.split(",")) for round_ in range(args.rounds)
                        for r in what_ifs(args.what_ifs_of, n, rates, round_)])
        return
    reason = netns_usable()
    if reason:
        print(f"skipped: {reason}")
        return
    rates = args.rates.split(",")
    for r in rates:
        if r != UNSHAPED:
            parse_rate(r)
    db = Path(args.db or f"/tmp/predict-vs-measured-{os.getpid()}.db")
    loads: dict[tuple[int, str, int], dict[str, str]] = {}
    rows: list[dict[str, object]] = []
    ifs: list[dict[str, object]] = []
    for n in map(int, args.hosts.split(",")):
        bench = Bench(n, db, args.steps)
        try:
            for round_ in range(args.rounds):
                bench.round = round_
                for rate in rates if round_ % 2 == 0 else rates[::-1]:
                    loads[(n, rate, round_)] = bench.measure(rate)
                    new = predictions(db, n, rate, round_)
                    rows += new
                    for r in new:
                        print(json.dumps({**r, "load": loads[(n, rate, round_)]}), flush=True)
                ifs += what_ifs(db, n, rates, round_)
        finally:
            bench.close()
    print(f"# predicted vs measured step ({time.strftime('%Y-%m-%d', time.gmtime())}; runs in {db})")
    print("| hosts | link | round | workload | measured ms | predicted ms | error | compute ms | comm ms "
          "| error, compute from GEMM rate | comm share measured / predicted | bound measured / predicted "
          "| load before, after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        share = "-" if r["measured_share"] is None else f"{r['measured_share']:.2f}"
        ld = loads[(int(r["hosts"]), str(r["rate"]), int(r["round"]))]
        print(f"| {r['hosts']} | {r['rate']} | {r['round']} | {r['workload']} | {r['measured_ms']:.0f} "
              f"| {r['predicted_ms']:.0f} | {_pct(r['error'])} | {r['compute_ms']:.0f} | {r['comm_ms']:.0f} "
              f"| {_pct(r['gemm_error'])} | {share} / {r['predicted_share']:.2f} "
              f"| {r['measured_bound'] or '-'} / {r['predicted_bound']} | {ld['load_before']}; {ld['load_after']} |")
    print()
    print("| hosts | link | workload | measured ms (mean of rounds) | predicted ms (mean) | error of the means "
          "| per round | bound measured / predicted |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    groups: dict[tuple[object, object, object], list[dict[str, object]]] = {}
    for r in rows:
        groups.setdefault((r["hosts"], r["rate"], r["workload"]), []).append(r)
    for (n, rate, workload), rs in groups.items():
        meas = statistics.fmean(float(r["measured_ms"]) for r in rs)  # type: ignore[arg-type]
        pred = statistics.fmean(float(r["predicted_ms"]) for r in rs)  # type: ignore[arg-type]
        bounds = ", ".join(f"{r['measured_bound'] or '-'} / {r['predicted_bound']}" for r in rs)
        print(f"| {n} | {rate} | {workload} | {meas:.0f} | {pred:.0f} | {_pct(pred / meas - 1)} "
              f"| {', '.join(_pct(r['error']) for r in rs)} | {bounds} |")
    print_what_ifs(ifs)


if __name__ == "__main__":
    main()
