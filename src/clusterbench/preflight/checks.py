"""The preflight checks: pure functions from facts (an inventory, kernel log findings, ECC
counters) and expectations to one ``CheckResult`` each, so every one is tested on fake data.

Status: ``ok``, ``warning`` (worth a look, does not fail the preflight), ``fail``, or
``not-applicable`` (nothing to check here, or the facts could not be read: the evidence says which).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from clusterbench.envinfo import torchcheck
from clusterbench.envinfo.sysfs import GPU_KINDS, NIC_KINDS, link_downgrade, pcie_gen
from clusterbench.preflight.kernel_log import Finding

OK, WARNING, FAIL, NA = "ok", "warning", "fail", "not-applicable"
STATUSES = (OK, WARNING, FAIL, NA)
MAX_EVIDENCE = 12


@dataclass(frozen=True)
class CheckResult:
    check: str
    status: str
    summary: str
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "summary": self.summary,
                "evidence": list(self.evidence)}


@dataclass(frozen=True)
class Expectations:
    gpus: int | None = None
    model: str | None = None
    nic_speed_gbps: float | None = None          # every physical NIC / RDMA port at least this
    nics: tuple[str, ...] = ()                   # interfaces (or RDMA devices) that must be up
    compute_partition: str | None = None         # AMD: SPX, DPX, QPX, CPX
    memory_partition: str | None = None          # AMD: NPS1, NPS4


def _cap(lines: list[str]) -> list[str]:
    return lines if len(lines) <= MAX_EVIDENCE else lines[:MAX_EVIDENCE] + [f"... {len(lines) - MAX_EVIDENCE} more"]


def _why_no_gpus(inv: dict[str, Any]) -> str:
    errs = inv.get("gpu_library_errors") or {}
    return "; ".join(f"{k}: {v}" for k, v in errs.items()) or "no GPU library or PyTorch device"


def gpu_count(inv: dict[str, Any], exp: Expectations) -> CheckResult:
    gpus = inv.get("gpus") or []
    n = len(gpus)
    evidence = [f"{g.get('index')}: {g.get('name')} ({g.get('pci') or 'pci ?'}, via {g.get('source')})" for g in gpus]
    if exp.gpus is None:
        if n == 0:
            return CheckResult("gpu_count", NA, "no GPU found (give --expect-gpus to require some)",
                               [_why_no_gpus(inv)])
        return CheckResult("gpu_count", OK, f"{n} GPU(s) found", _cap(evidence))
    pci_only = n > 0 and all(g.get("source") == "pci" for g in gpus) and inv.get("gpu_library_errors")
    if n == exp.gpus and pci_only:
        return CheckResult("gpu_count", WARNING, f"{n} GPU(s) on the PCI bus, but no library or PyTorch sees them",
                           _cap([_why_no_gpus(inv)] + evidence))
    if n == exp.gpus:
        return CheckResult("gpu_count", OK, f"{n} GPU(s) found, as expected", _cap(evidence))
    if n == 0:
        evidence = [_why_no_gpus(inv)]
    return CheckResult("gpu_count", FAIL, f"{n} GPU(s) found, expected {exp.gpus}", _cap(evidence))


def torch_gpus(inv: dict[str, Any], environ: dict[str, str] | None = None) -> CheckResult:
    """torch can use the GPUs this node has: the installed build against the GPUs the vendor
    library, /sys/class/drm or PCI show (a CUDA wheel on an AMD node sees none, and a benchmark
    would measure the CPU instead)."""
    found = torchcheck.evidence_from_inventory(inv)
    build = torchcheck.TorchBuild.from_dict(inv.get("torch"))
    seen = [e.describe() for e in found]
    if build is None:
        return CheckResult("torch_gpus", NA, "torch build not recorded in the inventory", seen)
    evidence = [build.describe() + (f", {build.devices} GPU(s) visible" if build.devices else "")] + seen
    wrong = torchcheck.problem(build, found, inv.get("rocm_version"), environ)
    if wrong:
        return CheckResult("torch_gpus", FAIL, wrong, evidence)
    if not found and build.devices == 0:
        return CheckResult("torch_gpus", NA, "no GPU on this node", evidence)
    if not found:
        return CheckResult("torch_gpus", OK, f"{build.describe()} uses {build.devices} GPU(s)", evidence)
    hidden = torchcheck.hidden_by(environ)
    if build.devices == 0:  # only reached when hidden on purpose
        return CheckResult("torch_gpus", OK, f"GPUs hidden from torch on purpose ({hidden} is set)", evidence)
    total = sum(e.count for e in found)
    env = dict(os.environ) if environ is None else environ
    visibility = [v for v in torchcheck.VISIBILITY_VARS if v in env]
    if build.devices < total and not visibility:
        return CheckResult("torch_gpus", WARNING, f"{build.describe()} sees {build.devices} of the "
                           f"{total} GPU(s) this node has, and no *_VISIBLE_DEVICES variable is set", evidence)
    return CheckResult("torch_gpus", OK, f"{build.describe()} uses {build.devices} GPU(s)", evidence)


def gpu_model(inv: dict[str, Any], exp: Expectations) -> CheckResult:
    gpus = inv.get("gpus") or []
    if exp.model is None:
        names = Counter(str(g.get("name")) for g in gpus)
        if not names:
            return CheckResult("gpu_model", NA, "no GPU found")
        return CheckResult("gpu_model", OK, ", ".join(f"{c} x {n}" for n, c in names.items()))
    if not gpus:
        return CheckResult("gpu_model", FAIL, f"no GPU found, expected {exp.model}", [_why_no_gpus(inv)])
    wrong = [g for g in gpus if exp.model.lower() not in str(g.get("name") or "").lower()]
    if wrong:
        return CheckResult("gpu_model", FAIL, f"{len(wrong)} of {len(gpus)} GPU(s) are not {exp.model}",
                           _cap([f"{g.get('index')}: {g.get('name')}" for g in wrong]))
    return CheckResult("gpu_model", OK, f"all {len(gpus)} GPU(s) match {exp.model!r}")


def gpu_partition(inv: dict[str, Any], exp: Expectations) -> CheckResult:
    """AMD compute/memory partition modes (and NVIDIA MIG mode) against the expected ones."""
    modes = []
    for g in inv.get("gpus") or []:
        if g.get("compute_partition") or g.get("memory_partition"):
            modes.append((f"gpu {g.get('index')}", g.get("compute_partition"), g.get("memory_partition")))
    if not modes:  # no library: the amdgpu sysfs files alone
        modes = [(c["card"], c.get("compute_partition"), c.get("memory_partition"))
                 for c in inv.get("amdgpu") or [] if c.get("compute_partition") or c.get("memory_partition")]
    mig = [f"gpu {g.get('index')}: MIG {'on' if g['mig']['current'] else 'off'}"
           + (" (change pending reset)" if g["mig"]["pending"] != g["mig"]["current"] else "")
           for g in inv.get("gpus") or [] if isinstance(g.get("mig"), dict)]
    evidence = [f"{who}: compute {c or '?'}, memory {m or '?'}" for who, c, m in modes] + mig
    if not modes and not mig:
        if exp.compute_partition or exp.memory_partition:
            return CheckResult("gpu_partition", FAIL, "partition modes expected but none readable",
                               ["no amdgpu current_compute_partition/current_memory_partition files"])
        return CheckResult("gpu_partition", NA, "no GPU partition information (not an AMD Instinct GPU, or no GPU)")
    bad = []
    for who, c, m in modes:
        if exp.compute_partition and (c or "").upper() != exp.compute_partition.upper():
            bad.append(f"{who}: compute partition {c or '?'}, expected {exp.compute_partition}")
        if exp.memory_partition and (m or "").upper() != exp.memory_partition.upper():
            bad.append(f"{who}: memory partition {m or '?'}, expected {exp.memory_partition}")
    if bad:
        return CheckResult("gpu_partition", FAIL, f"{len(bad)} partition mode(s) differ from the expected", _cap(bad))
    distinct = sorted({f"{c}/{m}" for _, c, m in modes})
    if len(distinct) > 1:
        return CheckResult("gpu_partition", WARNING, "GPUs of this host are in different partition modes: "
                           + ", ".join(distinct), _cap(evidence))
    return CheckResult("gpu_partition", OK, ("modes " + ", ".join(distinct)) if distinct else "MIG state read",
                       _cap(evidence))


def _shown(link: dict[str, Any], key: str) -> Any:
    return "?" if link.get(key) is None else link[key]


def pcie_links(inv: dict[str, Any], exp: Expectations) -> CheckResult:
    """GPU and NIC links below their maximum: narrower is a fault (fail); slower is a warning,
    since GPUs lower the link speed when idle to save power."""
    devs = [d for d in inv.get("pcie") or [] if d.get("kind") in GPU_KINDS + NIC_KINDS]
    known = [d for d in devs if d["link"].get("max_width") or d["link"].get("max_speed_gts")]
    if not known:
        return CheckResult("pcie_link", NA, "no GPU or NIC with PCIe link information in sysfs",
                           [f"{len(devs)} GPU/NIC PCI function(s) without link attributes (virtual device?)"] if devs else [])
    fails: list[str] = []
    warns: list[str] = []
    fine: list[str] = []
    unknown = 0
    for d in known:
        link = d["link"]
        problems = link_downgrade(link)
        gen = pcie_gen(link.get("current_speed_gts"))
        text = (f"{d['bdf']} {d['kind']} {d.get('vendor') or ''} ({d.get('driver') or 'no driver'}): "
                f"x{_shown(link, 'current_width')}/x{_shown(link, 'max_width')}, "
                f"{_shown(link, 'current_speed_gts')}/{_shown(link, 'max_speed_gts')} GT/s"
                + (f" (Gen{gen})" if gen else ""))
        # A maximum with no current value to hold against it ("Unknown" speed: the link is not
        # trained, or the device stopped answering) is not a link seen at its maximum.
        unread = [what for what, cur, top in (("width", "current_width", "max_width"),
                                              ("speed", "current_speed_gts", "max_speed_gts"))
                  if link.get(top) and link.get(cur) is None]
        if any(p.startswith(("width", "link down")) for p in problems):
            fails.append(f"{text}: {'; '.join(problems)}")
        elif problems:
            warns.append(f"{text}: {'; '.join(problems)}")
        elif unread:
            unknown += 1
            warns.append(f"{text}: current {' and '.join(unread)} unknown")
        else:
            fine.append(text)
    if fails:
        return CheckResult("pcie_link", FAIL, f"{len(fails)} link(s) narrower than their maximum", _cap(fails + warns))
    if warns:
        slow = len(warns) - unknown
        what = [f"{slow} link(s) below maximum speed (idle GPUs downshift; re-check under load)"] if slow else []
        what += [f"{unknown} link(s) whose current width or speed cannot be read"] if unknown else []
        return CheckResult("pcie_link", WARNING, ", ".join(what), _cap(warns))
    return CheckResult("pcie_link", OK, f"{len(fine)} link(s) at maximum width and speed", _cap(fine))


def pcie_aer(inv: dict[str, Any], exp: Expectations) -> CheckResult:
    devs = [d for d in inv.get("pcie") or [] if d.get("aer")]
    if not devs:
        return CheckResult("pcie_aer", NA, "no PCIe AER counters exposed (aer_dev_* files)")
    fails = [f"{d['bdf']} {d['kind']}: {d['aer']}" for d in devs
             if d["aer"].get("fatal", 0) or d["aer"].get("nonfatal", 0)]
    warns = [f"{d['bdf']} {d['kind']}: {d['aer']}" for d in devs if d["aer"].get("correctable", 0)]
    if fails:
        return CheckResult("pcie_aer", FAIL, f"{len(fails)} device(s) with uncorrectable PCIe errors", _cap(fails + warns))
    if warns:
        return CheckResult("pcie_aer", WARNING, f"{len(warns)} device(s) with corrected PCIe errors", _cap(warns))
    return CheckResult("pcie_aer", OK, f"no PCIe errors counted on {len(devs)} device(s)")


def kernel_log(findings: list[Finding] | None, source: str) -> CheckResult:
    if findings is None:
        return CheckResult("kernel_log", NA, "kernel log not readable", [source])
    if not findings:
        return CheckResult("kernel_log", OK, f"no Xid, amdgpu or PCIe AER errors ({source})")
    counts = Counter(f"{f.kind} {f.detail}" + (f" on {f.device}" if f.device else "") for f in findings)
    evidence = [f"{n} x {what}" for what, n in counts.most_common()]
    evidence += [f.line for f in findings[-3:]]
    status = FAIL if any(f.severity == FAIL for f in findings) else WARNING
    kinds = ", ".join(sorted({f.kind for f in findings}))
    return CheckResult("kernel_log", status, f"{len(findings)} error line(s) ({kinds}) in {source}", _cap(evidence))


def gpu_ecc(inv: dict[str, Any], ecc: list[dict[str, Any]]) -> CheckResult:
    """Uncorrectable ECC errors or pending/failed row remapping fail; corrected ones warn."""
    rows = list(ecc)
    for c in inv.get("amdgpu") or []:
        for block, counts in (c.get("ras") or {}).items():
            rows.append({"index": f"{c['card']}/{block}", "enabled": True,
                         "uncorrected": counts.get("ue"), "corrected": counts.get("ce")})
    enabled = [r for r in rows if r.get("enabled")]
    if not enabled:
        return CheckResult("gpu_ecc", NA, "no ECC counters exposed" if not rows else "ECC disabled on every GPU")
    fails, warns = [], []
    for r in enabled:
        text = f"gpu {r['index']}: uncorrected {r.get('uncorrected')}, corrected {r.get('corrected')}"
        if (r.get("uncorrected") or 0) > 0 or r.get("remap_failed") or r.get("remap_pending"):
            extra = " (row remap pending: reset the GPU)" if r.get("remap_pending") else ""
            extra += " (row remap failed)" if r.get("remap_failed") else ""
            fails.append(text + extra)
        elif (r.get("corrected") or 0) > 0:
            warns.append(text)
    if fails:
        return CheckResult("gpu_ecc", FAIL, f"{len(fails)} GPU memory block(s) with uncorrectable errors", _cap(fails + warns))
    if warns:
        return CheckResult("gpu_ecc", WARNING, f"{len(warns)} with corrected ECC errors", _cap(warns))
    return CheckResult("gpu_ecc", OK, f"no ECC errors on {len(enabled)} counter set(s)")


# The kernel's SPEED_UNKNOWN is (u32)-1: kernels and drivers that print it unsigned show
# 4294967295 Mb/s, which would pass any --expect-nic-speed. No 32-bit signed value above this is
# a speed a link has negotiated.
_MAX_NIC_SPEED_MBPS = 2**31 - 1


@dataclass
class _Links:
    """The nic and rdma checks' links sorted as they are judged: failing, warned about (down, or
    of a speed not known) and fine."""
    fails: list[str] = field(default_factory=list)
    warns: list[str] = field(default_factory=list)
    fine: list[str] = field(default_factory=list)
    unknown: int = 0     # of the warnings, those of a link whose speed is not known

    def up(self, text: str, gbps: float | None, expected: float | None) -> None:
        """A link that is up, against the expected speed: an expectation not checked is not one met."""
        if expected and gbps is None:
            self.unknown += 1
            self.warns.append(f"{text}: the expected {expected:g} Gb/s cannot be checked")
        elif expected and gbps is not None and gbps < expected:
            self.fails.append(f"{text}: below the expected {expected:g} Gb/s")
        else:
            self.fine.append(text)

    def result(self, check: str, *, bad: str, down: str, unknown: str, fine: str) -> CheckResult:
        """FAIL naming the ``bad`` links, else WARNING counting the ``down`` ones and those of
        ``unknown`` speed, else OK counting the ``fine`` ones."""
        if self.fails:
            return CheckResult(check, FAIL, f"{len(self.fails)} {bad}", _cap(self.fails + self.warns))
        if self.warns:
            n_down = len(self.warns) - self.unknown
            what = [f"{n_down} {down}"] if n_down else []
            what += [f"{self.unknown} of unknown {unknown}"] if self.unknown else []
            return CheckResult(check, WARNING, ", ".join(what), _cap(self.warns + self.fine))
        return CheckResult(check, OK, f"{len(self.fine)} {fine}", _cap(self.fine))


def nic_speed_mbps(value: Any) -> int | None:
    """A NIC's speed in Mb/s as the inventory holds it, or None where it is not a speed a link
    runs at (missing, 0, negative, SPEED_UNKNOWN read unsigned, not an integer)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= _MAX_NIC_SPEED_MBPS else None


def nics(inv: dict[str, Any], exp: Expectations) -> CheckResult:
    """Physical interfaces: down (a warning, or a fail for one named by --nic) or slower than expected."""
    phys = [n for n in inv.get("nics") or [] if not n.get("virtual")]
    if exp.nics:
        missing = [name for name in exp.nics
                   if name not in {n["name"] for n in inv.get("nics") or []}
                   and name not in {r["name"] for r in inv.get("rdma") or []}]
        if missing:
            return CheckResult("nic", FAIL, f"interface(s) not found: {', '.join(missing)}")
        phys = [n for n in inv.get("nics") or [] if n["name"] in exp.nics]
    if not phys:
        return CheckResult("nic", NA, "no physical network interface")
    links = _Links()
    for n in phys:
        mbps = nic_speed_mbps(n.get("speed_mbps"))
        gbps = None if mbps is None else mbps / 1000
        text = (f"{n['name']} ({n.get('driver') or '?'}): {n.get('operstate')}, "
                f"{'speed unknown' if gbps is None else f'{gbps:g} Gb/s'}, MTU {n.get('mtu')}")
        if n.get("operstate") not in ("up", "unknown"):
            (links.fails if n["name"] in exp.nics else links.warns).append(text)
        else:
            links.up(text, gbps, exp.nic_speed_gbps)
    return links.result("nic", bad="interface(s) down or too slow", down="physical interface(s) down",
                        unknown="speed", fine="physical interface(s) up")


def rdma_ports(inv: dict[str, Any], exp: Expectations) -> CheckResult:
    devs = inv.get("rdma") or []
    if not devs:
        return CheckResult("rdma", NA, "no RDMA device in /sys/class/infiniband")
    if exp.nics:  # named interfaces: only their RDMA devices are checked
        devs = [d for d in devs if d["name"] in exp.nics or set(d.get("netdevs") or []) & set(exp.nics)]
        if not devs:
            return CheckResult("rdma", NA, "no RDMA device behind the named interface(s)")
    links = _Links()
    for d in devs:
        named = bool(exp.nics)
        for p in d.get("ports") or []:
            roce = [g for g in p.get("gids") or [] if (g.get("type") or "").startswith("RoCE v2")]
            text = (f"{d['name']} port {p['port']} ({p.get('link_layer')}, fw {d.get('fw_ver')}): "
                    f"{p.get('state')}/{p.get('phys_state')}, {p.get('rate') or 'rate ?'}"
                    + (f", RoCE v2 GID index {','.join(str(g['index']) for g in roce)}" if roce else ""))
            rate = p.get("rate_gbps")
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < math.inf:
                rate = None
            if p.get("state") != "ACTIVE":
                (links.fails if named else links.warns).append(text)
            else:
                links.up(text, rate, exp.nic_speed_gbps)
    return links.result("rdma", bad="RDMA port(s) not active or too slow", down="RDMA port(s) not active",
                        unknown="rate", fine="RDMA port(s) active")
