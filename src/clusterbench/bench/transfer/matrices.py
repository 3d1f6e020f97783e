"""The standard transfer matrices as generated tests: h2d, d2h, p2p (uni and bi), a2a, and on
a host without GPUs, host buffer-to-buffer copies between NUMA nodes (h2h)."""

from __future__ import annotations

from dataclasses import dataclass

from clusterbench.bench.transfer.engine import Topology
from clusterbench.bench.transfer.lang import Exe, Mem, Test, Transfer

MATRICES = ("h2d", "d2h", "p2p", "a2a", "h2h")
METHODS = {"D": "copy_engine", "G": "kernel", "C": "CPU"}


@dataclass(frozen=True)
class Planned:
    test: Test
    kind: str          # h2d, d2h, p2p, a2a, h2h, or "config"
    direction: str     # uni, bi
    method: str        # copy_engine, kernel, CPU, or the executor name for config tests
    host_memory: str   # pinned, pageable, or "" when no host memory takes part
    # a config test's place among the --config file's tests and then the --test ones, from 1,
    # counting those skipped on this host: the same test has the same index on every host
    index: int | None = None


def _t(src: Mem, exe: Exe, dst: Mem, nbytes: int) -> Transfer:
    return Transfer((src,), exe, (dst,), nbytes)


def plan(kinds: list[str], topo: Topology, nbytes: int, methods: list[str],
         gpu_ids: list[int] | None = None) -> list[Planned]:
    """Tests for the requested matrices on this topology (GPU matrices need GPUs, h2h does not),
    over ``gpu_ids`` (default: every GPU)."""
    out: list[Planned] = []
    gpus = list(range(topo.gpus)) if gpu_ids is None else list(gpu_ids)
    for kind in kinds:
        if kind in ("h2d", "d2h"):
            for mem, hm in (("C", "pinned"), ("U", "pageable")):
                for g in gpus:
                    # host memory on the GPU's own NUMA node, as a process bound to it would use
                    h, d = Mem(mem, topo.host_node(g)), Mem("G", g)
                    src, dst = (h, d) if kind == "h2d" else (d, h)
                    name = f"{kind} {hm} {src}->{dst}"
                    out.append(Planned(Test(name, (_t(src, Exe("D", g), dst, nbytes),)), kind, "uni",
                                       "copy_engine", hm))
        elif kind == "p2p":
            for exe_kind in methods:
                method = METHODS[exe_kind]
                for i in gpus:
                    for j in gpus:
                        a, b = Mem("G", i), Mem("G", j)
                        out.append(Planned(Test(f"p2p {method} {a}->{b}",
                                                (_t(a, Exe(exe_kind, i), b, nbytes),)),
                                           kind, "uni", method, ""))
                for i in gpus:
                    for j in gpus:
                        if i < j:
                            a, b = Mem("G", i), Mem("G", j)
                            out.append(Planned(Test(f"p2p {method} {a}<->{b}", (
                                _t(a, Exe(exe_kind, i), b, nbytes), _t(b, Exe(exe_kind, j), a, nbytes))),
                                kind, "bi", method, ""))
        elif kind == "a2a" and len(gpus) > 1:
            for exe_kind in methods:
                method = METHODS[exe_kind]
                ts = tuple(_t(Mem("G", i), Exe(exe_kind, i), Mem("G", j), nbytes)
                           for i in gpus for j in gpus if i != j)
                out.append(Planned(Test(f"a2a {method}", ts), kind, "uni", method, ""))
        elif kind == "h2h":
            for i in topo.numa_nodes:
                for j in topo.numa_nodes:
                    a, b = Mem("C", i), Mem("C", j)
                    out.append(Planned(Test(f"h2h {a}->{b}", (_t(a, Exe("C", i), b, nbytes),)),
                                       kind, "uni", "CPU", "pageable"))
            for i in topo.numa_nodes:
                for j in topo.numa_nodes:
                    if i < j:
                        a, b = Mem("C", i), Mem("C", j)
                        out.append(Planned(Test(f"h2h {a}<->{b}", (
                            _t(a, Exe("C", i), b, nbytes), _t(b, Exe("C", j), a, nbytes))),
                            kind, "bi", "CPU", "pageable"))
    return out


def default_kinds(topo: Topology) -> list[str]:
    return ["h2d", "d2h", "p2p", "a2a"] if topo.gpus else ["h2h"]
