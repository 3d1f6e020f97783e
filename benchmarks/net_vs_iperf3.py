"""clusterbench net vs iperf3 on the same namespace link, in the same run (root only).

Two emulated hosts (network namespaces on a bridge); for each link condition (unshaped, and
tbf-shaped to 1 Gbit/s) it runs iperf3 (-P streams, receiver figure) and `clusterbench net`
(the same number of streams, launched with torchrun on both hosts), alternating A B A B, and
prints each figure and the ratio clusterbench / iperf3 of the medians.

    sudo python benchmarks/net_vs_iperf3.py [--streams 4] [--seconds 3] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from cluster_fixtures import create_cluster, netns_usable  # noqa: E402


def iperf3(c, streams: int, seconds: float) -> float:
    """Receiver bytes/s from iperf3's JSON (sum_received), client h0 -> server h1."""
    server = subprocess.Popen(c.exec_argv(1, ["iperf3", "-s", "-1", "-B", c.hosts[1]]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        r = subprocess.run(c.exec_argv(0, ["iperf3", "-c", c.hosts[1], "-P", str(streams), "-t",
                                           str(seconds), "-J"]),
                           capture_output=True, text=True, timeout=seconds + 30)
        doc = json.loads(r.stdout)
        return float(doc["end"]["sum_received"]["bits_per_second"]) / 8
    finally:
        server.wait(10)


def clusterbench_net(c, streams: int, seconds: float) -> float:
    """bandwidth node0 -> node1 from `clusterbench net --json`, run on both hosts."""
    r = subprocess.run(
        [sys.executable, "-m", "clusterbench", "launch", "torchrun", "--hosts", ",".join(c.hosts[:2]),
         "--agent", c.agent, "--env", "GLOO_SOCKET_IFNAME=eth0", "--wall-timeout", "300", "--",
         "net", "--no-latency", "--streams", str(streams), "--duration", str(seconds), "--json",
         "--db", str(c.workdir / "bench.db")],
        capture_output=True, text=True, timeout=330)
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    bw = [m["value"] for m in rows if m.get("kind") == "measurement" and m["metric"] == "bandwidth"
          and m["params"].get("src_host") == "node0"]
    if r.returncode != 0 or not bw:
        raise SystemExit(f"clusterbench net failed: {r.stderr.strip()[-400:]}")
    return bw[0] * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    reason = netns_usable()
    if reason:
        print(f"skipped: {reason}")
        return
    c = create_cluster(2)
    try:
        print(f"# {args.streams} streams, {args.seconds:g} s per test, {args.rounds} rounds, "
              f"h0 -> h1 ({time.strftime('%Y-%m-%d', time.gmtime())})")
        print(f"{'link':>10s} {'iperf3 Gbit/s':>14s} {'clusterbench Gbit/s':>20s} {'ratio':>7s}")
        for label, rate in (("unshaped", None), ("tbf 1gbit", "1gbit")):
            if rate:
                c.shape(1, rate)
            ip, cb = [], []
            for _ in range(args.rounds):
                ip.append(iperf3(c, args.streams, args.seconds))
                cb.append(clusterbench_net(c, args.streams, args.seconds))
            a, b = statistics.median(ip), statistics.median(cb)
            print(f"{label:>10s} {a * 8 / 1e9:14.3f} {b * 8 / 1e9:20.3f} {b / a:7.3f}"
                  f"   (iperf3 {', '.join(f'{x * 8 / 1e9:.2f}' for x in ip)};"
                  f" clusterbench {', '.join(f'{x * 8 / 1e9:.2f}' for x in cb)})")
    finally:
        c.close()


if __name__ == "__main__":
    main()
