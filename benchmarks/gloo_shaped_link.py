"""gloo all_reduce busbw through a link shaped to 1 Gbit/s (tbf), against the link rate and
against iperf3 on the same link, in the same run (root only).

Two emulated hosts; host 1's link is shaped both ways. `clusterbench coll all_reduce` runs
with torchrun on both hosts (one rank each, gloo); for 2 ranks busbw = algbw, and each rank
sends and receives the whole message once, so busbw is directly comparable to the link rate.
A bare torch.distributed loop (same sizes and iterations, same launcher) runs on the same
link in the same run as the peer.

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

from clusterbench.launch.common import Spec  # noqa: E402
from clusterbench.launch.torchrun import run_torchrun_on_hosts  # noqa: E402
from clusterbench.units import format_size, parse_rate, parse_size  # noqa: E402

BARE = """
import json, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
n = int(sys.argv[1])
for size in map(int, sys.argv[2:]):
    t = torch.ones(size // 4)
    dist.all_reduce(t)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(n):
        dist.all_reduce(t)
    dist.barrier()
    dt = (time.perf_counter() - t0) / n
    ws = dist.get_world_size()
    if dist.get_rank() == 0:
        print(json.dumps({"bytes": size, "busbw": size / dt * 2 * (ws - 1) / ws / 1e9}), flush=True)
dist.destroy_process_group()
"""


def bare_gloo(c, sizes: list[int], iters: int) -> dict[int, float]:
    script = c.workdir / "bare_allreduce.py"
    script.write_text(BARE)
    spec = Spec(nodes=2, env={"GLOO_SOCKET_IFNAME": "eth0"},
                command=[str(script), str(iters), *map(str, sizes)], exe=[sys.executable])
    res = run_torchrun_on_hosts(c.hosts[:2], [c.agent], spec, port=29460, timeout=500)
    rows = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    return {r["bytes"]: r["busbw"] * 1e9 for r in rows}


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
        bus = [m for m in rows if m.get("kind") == "measurement" and m["metric"] == "busbw"]
        if r.returncode != 0 or not bus:
            raise SystemExit(f"clusterbench coll failed: {r.stderr.strip()[-400:]}")
        sizes = sorted({m["params"]["bytes"] for m in bus})
        assert sizes[0] >= parse_size(args.b)
        bare = bare_gloo(c, sizes, int(args.n))
        print(f"# gloo all_reduce, 2 hosts, tbf {args.rate} on host 1 ({time.strftime('%Y-%m-%d', time.gmtime())})")
        print(f"# link rate {link * 8 / 1e9:.3f} Gbit/s; iperf3 (1 stream) through it: "
              f"{ip * 8 / 1e9:.3f} Gbit/s = {ip / link:.3f} of the link")
        print(f"{'bytes':>8s} {'placement':>9s} {'busbw Gbit/s':>13s} {'/ link':>7s} {'/ iperf3':>9s}"
              f" {'bare torch Gbit/s':>18s} {'cb / bare':>10s}")
        for m in bus:
            v = m["value"] * 1e9
            b = bare.get(m["params"]["bytes"])
            print(f"{format_size(m['params']['bytes']):>8s} {m['params'].get('placement', ''):>9s} "
                  f"{v * 8 / 1e9:13.3f} {v / link:7.3f} {v / ip:9.3f} "
                  f"{(b or 0) * 8 / 1e9:18.3f} {(v / b if b else float('nan')):10.3f}")
    finally:
        c.close()


if __name__ == "__main__":
    main()
