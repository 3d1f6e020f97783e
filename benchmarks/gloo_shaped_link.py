"""gloo all_reduce busbw through a link shaped to 1 Gbit/s (tbf), against the link rate and
against iperf3 on the same link, in the same run (root only).

Two emulated hosts; host 1's link is shaped both ways. `clusterbench coll all_reduce` runs
with torchrun on both hosts (one rank each, gloo); for 2 ranks busbw = algbw, and each rank
sends and receives the whole message once, so busbw is directly comparable to the link rate.

    sudo python benchmarks/gloo_shaped_link.py [--rate 1gbit] [-b 64M] [-e 256M]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from cluster_fixtures import create_cluster, netns_usable  # noqa: E402
from net_vs_iperf3 import iperf3  # noqa: E402

from clusterbench.units import format_size, parse_rate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("-b", default="64M")
    ap.add_argument("-e", default="256M")
    ap.add_argument("-n", default="5")
    args = ap.parse_args()
    reason = netns_usable()
    if reason:
        print(f"skipped: {reason}")
        return
    link = parse_rate(args.rate)
    c = create_cluster(2)
    try:
        c.shape(1, args.rate)
        ip = iperf3(c, 1, 3.0)
        r = subprocess.run(
            [sys.executable, "-m", "clusterbench", "launch", "torchrun", "--hosts", ",".join(c.hosts),
             "--agent", c.agent, "--env", "GLOO_SOCKET_IFNAME=eth0", "--wall-timeout", "500", "--",
             "coll", "all_reduce", "-b", args.b, "-e", args.e, "-n", args.n, "-w", "1",
             "--device", "cpu", "--backend", "gloo", "--json", "--db", str(c.workdir / "bench.db")],
            capture_output=True, text=True, timeout=560)
        rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        bus = [m for m in rows if m["metric"] == "busbw"]
        if r.returncode != 0 or not bus:
            raise SystemExit(f"clusterbench coll failed: {r.stderr.strip()[-400:]}")
        print(f"# gloo all_reduce, 2 hosts, tbf {args.rate} on host 1 ({time.strftime('%Y-%m-%d', time.gmtime())})")
        print(f"# link rate {link * 8 / 1e9:.3f} Gbit/s; iperf3 (1 stream) through it: "
              f"{ip * 8 / 1e9:.3f} Gbit/s = {ip / link:.3f} of the link")
        print(f"{'bytes':>8s} {'placement':>9s} {'busbw Gbit/s':>13s} {'/ link':>7s} {'/ iperf3':>9s}")
        for m in bus:
            v = m["value"] * 1e9
            print(f"{format_size(m['params']['bytes']):>8s} {m['params'].get('placement', ''):>9s} "
                  f"{v * 8 / 1e9:13.3f} {v / link:7.3f} {v / ip:9.3f}")
    finally:
        c.close()


if __name__ == "__main__":
    main()
