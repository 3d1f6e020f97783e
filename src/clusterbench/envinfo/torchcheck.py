"""Can this PyTorch use the GPUs this node has? The torch build against the evidence of GPUs.

PyPI's default ``torch`` wheel is a CUDA build; on an AMD node it finds no GPU, and a benchmark
that quietly falls back to the CPU measures the wrong device. So the GPUs are counted without
torch, from the strongest evidence at hand: the vendor library (NVML, AMD SMI), then the DRM
cards in ``/sys/class/drm``, then the PCI bus (vendor 0x10de NVIDIA or 0x1002 AMD with a GPU class
code). ``problem()`` turns a mismatch into the one line the user reads: which torch build is
installed and which one this node needs.

AMD functions of PCI class 0x0300 (VGA: Radeon cards and the integrated graphics of Ryzen APUs)
are not taken as evidence: an APU laptop with a CPU-only torch is a CPU machine. Instinct GPUs
are class 0x0380 (MI100/MI200) or 0x1200 (MI300 and later).
"""

from __future__ import annotations

import importlib.util
import os
import re
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clusterbench.envinfo import gpulib, sysfs

VENDOR_IDS = {"0x10de": "NVIDIA", "0x1002": "AMD"}
# PCI class (first 4 hex digits) that counts as a compute GPU, per vendor.
COMPUTE_CLASSES = {"NVIDIA": ("0300", "0302", "0380"), "AMD": ("0380", "1200")}
VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
ROCM_INDEX = "https://download.pytorch.org/whl/rocm{version}"
INSTALL_HINT = 'README "Install"'
TORCH_MISSING = ("this command runs benchmarks and needs PyTorch, which is not installed (an "
                 "analysis-only install): pip install 'clusterbench[torch]' on NVIDIA, or the ROCm or "
                 f"CPU wheel of torch as in {INSTALL_HINT}")




def torch_unusable(error: BaseException) -> str:
    """Why ``import torch`` failed, for the one line a benchmark command ends with: not installed
    (an analysis-only install), or installed but failing to load (under ``ulimit -v`` its shared
    libraries cannot be mapped; a CUDA library missing): saying "not installed" there sends the
    user to install what is already installed."""
    if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] == "torch":
        try:
            installed = importlib.util.find_spec("torch") is not None
        except (ImportError, ValueError):
            installed = False
        if not installed:
            return TORCH_MISSING
    text = " ".join(str(error).split())
    why = f"{type(error).__name__}: {text[:300]}{'...' if len(text) > 300 else ''}"
    return (f"PyTorch is installed but failed to load ({why}): a memory limit (ulimit -v), or a library "
            "of its install missing or broken; python -c 'import torch' shows the whole error")


@dataclass(frozen=True)
class TorchBuild:
    """What the installed torch is and what it sees; ``version`` None: torch is not installed."""

    version: str | None
    cuda: str | None = None          # torch.version.cuda: a CUDA build
    hip: str | None = None           # torch.version.hip: a ROCm build
    devices: int = 0                 # torch.cuda.device_count() when available, else 0
    reason: str | None = None        # why torch.cuda is unavailable (torch's own warning), if known

    @property
    def kind(self) -> str:
        if self.version is None:
            return "none"
        return "rocm" if self.hip else "cuda" if self.cuda else "cpu"

    def describe(self) -> str:
        if self.version is None:
            return "no torch"
        what = {"rocm": f"a ROCm {_short(self.hip)} build", "cuda": f"a CUDA {_short(self.cuda)} build",
                "cpu": "a CPU-only build"}[self.kind]
        return f"torch {self.version} ({what})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TorchBuild | None:
        if not isinstance(d, dict) or "version" not in d:
            return None
        return cls(version=d.get("version"), cuda=d.get("cuda"), hip=d.get("hip"),
                   devices=int(d.get("devices") or 0), reason=d.get("reason"))


def _short(version: str | None) -> str:
    """``6.2.41133-dd7f95766`` -> ``6.2``; ``12.8`` stays."""
    parts = re.findall(r"\d+", version or "")
    return ".".join(parts[:2]) if parts else "?"


def torch_build() -> TorchBuild:
    """The installed torch and the GPUs it can use (torch's own reason when it can use none)."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - not only ImportError: a CUDA library missing is an OSError
        return TorchBuild(None, reason=f"{type(e).__name__}: {e}")
    hip = getattr(torch.version, "hip", None)
    cuda = torch.version.cuda
    reason = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            available = bool(torch.cuda.is_available())
            devices = int(torch.cuda.device_count()) if available else 0
        except Exception as e:  # noqa: BLE001 - a broken driver install reads as "no GPU", with why
            available, devices, reason = False, 0, f"{type(e).__name__}: {e}"
    if not available and reason is None:
        texts = [str(w.message).strip() for w in caught if str(w.message).strip()]
        reason = texts[0].splitlines()[0][:200] if texts else None
    return TorchBuild(str(torch.__version__), cuda=str(cuda) if cuda else None,
                      hip=str(hip) if hip else None, devices=devices, reason=reason)


@dataclass(frozen=True)
class GpuEvidence:
    vendor: str   # NVIDIA | AMD
    count: int
    source: str   # NVML | AMD SMI | /sys/class/drm | PCI

    def describe(self) -> str:
        return f"{self.count} {self.vendor} GPU(s) ({self.source})"


def _pci_gpus(pci: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for d in pci:
        vendor = VENDOR_IDS.get(str(d.get("vendor_id") or "").lower())
        cls = str(d.get("class") or "")[2:6]
        if vendor and cls in COMPUTE_CLASSES[vendor]:
            counts[vendor] = counts.get(vendor, 0) + 1
    return counts


def drm_gpus(root: Path | str = "/") -> dict[str, int]:
    """Compute GPUs behind ``/sys/class/drm/card<N>`` (one card per GPU), per vendor."""
    base = Path(root) / "sys/class/drm"
    try:
        cards = sorted(c for c in os.listdir(base) if re.fullmatch(r"card\d+", c))
    except OSError:
        return {}
    devices = [{"vendor_id": sysfs.read_text(base / c / "device" / "vendor"),
                "class": sysfs.read_text(base / c / "device" / "class")} for c in cards]
    return _pci_gpus(devices)


def _strongest(by_source: list[tuple[str, dict[str, int]]]) -> list[GpuEvidence]:
    """Per vendor, the count from the first source that saw any."""
    out: dict[str, GpuEvidence] = {}
    for source, counts in by_source:
        for vendor, n in counts.items():
            if n > 0 and vendor not in out:
                out[vendor] = GpuEvidence(vendor, n, source)
    return list(out.values())


def evidence(root: Path | str = "/", use_libraries: bool = True) -> list[GpuEvidence]:
    """GPUs this node has, whatever torch says: vendor libraries, DRM cards, PCI functions."""
    libs: dict[str, int] = {}
    if use_libraries:
        for lib in gpulib.libraries():
            libs[lib.vendor] = libs.get(lib.vendor, 0) + len(lib.handles)
    return _strongest([
        ("NVML", {k: v for k, v in libs.items() if k == "NVIDIA"}),
        ("AMD SMI", {k: v for k, v in libs.items() if k == "AMD"}),
        ("/sys/class/drm", drm_gpus(root)),
        ("PCI", _pci_gpus(sysfs.pci_devices(root, kinds=sysfs.GPU_KINDS))),
    ])


def evidence_from_inventory(inv: dict[str, Any]) -> list[GpuEvidence]:
    """The same evidence from a stored inventory (``envinfo.inventory.collect``)."""
    libs: dict[str, dict[str, int]] = {"nvml": {}, "amdsmi": {}}
    for g in inv.get("gpus") or []:
        if g.get("source") in libs and g.get("vendor"):
            counts = libs[g["source"]]
            counts[g["vendor"]] = counts.get(g["vendor"], 0) + 1
    return _strongest([("NVML", libs["nvml"]), ("AMD SMI", libs["amdsmi"]),
                       ("/sys/class/drm", dict(inv.get("drm_gpus") or {})),
                       ("PCI", _pci_gpus(inv.get("pcie") or []))])


def hidden_by(environ: dict[str, str] | None = None) -> str | None:
    """The variable that hides every GPU on purpose (``CUDA_VISIBLE_DEVICES=""`` or ``-1``), if any."""
    environ = dict(os.environ) if environ is None else environ
    for var in VISIBILITY_VARS:
        value = environ.get(var)
        if value is not None and (value.strip() == "" or value.strip().startswith("-1")):
            return var
    return None


def rocm_version(root: Path | str = "/") -> str | None:
    """The ROCm release installed on the node (``/opt/rocm/.info/version``), as ``6.2``."""
    text = sysfs.read_text(Path(root) / "opt/rocm/.info/version")
    return _short(text) if text and re.match(r"\d+\.\d+", text) else None


def needed_build(vendor: str, rocm: str | None = None) -> str:
    """The torch build a vendor's GPUs need, with the command that installs it."""
    if vendor == "AMD":
        index = ROCM_INDEX.format(version=rocm or "<X.Y>")
        where = f"ROCm {rocm} is in /opt/rocm" if rocm else "use the index of the node's ROCm version"
        return (f"a ROCm build of torch: pip install torch --index-url {index} ({where}), "
                f"or the ROCm container's torch; {INSTALL_HINT}")
    return f"a CUDA build of torch: pip install torch (PyPI's default wheel); {INSTALL_HINT}"


def problem(build: TorchBuild, found: list[GpuEvidence], rocm: str | None = None,
            environ: dict[str, str] | None = None) -> str | None:
    """Why torch cannot use the GPUs this node has, as one line; None when it can (or there are
    none, or the user hid them with CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES on purpose)."""
    if not found or build.devices > 0 or hidden_by(environ):
        return None
    gpus = found[0]
    seen = " and ".join(e.describe() for e in found)
    if build.kind == "none":
        return f"this node has {seen} but torch is not installed: install {needed_build(gpus.vendor, rocm)}"
    wanted = "rocm" if gpus.vendor == "AMD" else "cuda"
    if build.kind != wanted:
        return (f"this node has {seen} but {build.describe()} cannot use them: "
                f"install {needed_build(gpus.vendor, rocm)}")
    why = f": {build.reason}" if build.reason else ""
    return (f"this node has {seen} but {build.describe()} sees none (torch.cuda.is_available() is "
            f"False{why}); check the driver, the device files and the runtime that torch was built for")


def device_problem(root: Path | str = "/") -> str | None:
    """``problem()`` for this process on this node (reads the vendor libraries only at ``/``)."""
    build = torch_build()
    if build.devices > 0:
        return None
    return problem(build, evidence(root, use_libraries=str(root) == "/"), rocm_version(root))
