"""The vendors' management libraries, NVML (nvidia-ml-py) and AMD SMI (amdsmi), behind one face.

Both are optional. ``nvml()`` / ``amdsmi()`` return a handle object, or None when the module is
not installed or the library does not initialise (no driver, no GPU, a container without the
device files); the reason is kept in ``unavailable`` so ``clusterbench env`` can say why. Every
per-device query is guarded on its own: a GPU that lacks one counter (no ECC on a consumer card,
no MIG on an MI300X) reports the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

unavailable: dict[str, str] = {}
_lock = threading.Lock()
_cache: dict[str, Any] = {}


def _try(fn: Callable[[], Any], default: Any = None) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - vendor libraries raise their own error types per query
        return default


def _text(v: Any) -> Any:
    return v.decode(errors="replace") if isinstance(v, bytes) else v


class Nvml:
    """NVIDIA devices through NVML, initialised once per process."""

    vendor = "NVIDIA"

    def __init__(self, mod: Any) -> None:
        self.m = mod
        self.handles = [mod.nvmlDeviceGetHandleByIndex(i) for i in range(mod.nvmlDeviceGetCount())]

    def versions(self) -> dict[str, str]:
        m = self.m
        v = {"nvidia_driver": _text(_try(m.nvmlSystemGetDriverVersion))}
        cuda = _try(m.nvmlSystemGetCudaDriverVersion)
        if isinstance(cuda, int) and not isinstance(cuda, bool) and cuda > 0:   # 12040 -> 12.4
            v["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
        return {k: str(x) for k, x in v.items() if x}

    def devices(self) -> list[dict[str, Any]]:
        m = self.m
        out = []
        for i, h in enumerate(self.handles):
            # conversions inside _try too: an answer of an unexpected shape is an unknown value
            total = _try(lambda h=h: _bytes(m.nvmlDeviceGetMemoryInfo(h).total))
            pci = _try(lambda h=h: m.nvmlDeviceGetPciInfo(h))
            mig = _try(lambda h=h: m.nvmlDeviceGetMigMode(h))
            mig = _try(lambda mig=mig: {"current": bool(mig[0]), "pending": bool(mig[1])}) if mig else None
            d = {
                "index": i, "vendor": "NVIDIA", "source": "nvml",
                "name": _text(_try(lambda h=h: m.nvmlDeviceGetName(h))),
                "uuid": _text(_try(lambda h=h: m.nvmlDeviceGetUUID(h))),
                "serial": _text(_try(lambda h=h: m.nvmlDeviceGetSerial(h))),
                "pci": _text(getattr(pci, "busId", None)) if pci is not None else None,
                "memory_bytes": total,
                "vbios": _text(_try(lambda h=h: m.nvmlDeviceGetVbiosVersion(h))),
                "power_limit_w": _try(lambda h=h: m.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
                # MIG mode: (current, pending); 1 means enabled.
                "mig": mig,
            }
            if isinstance(d["pci"], str):
                d["pci"] = _short_bdf(d["pci"])
            out.append(d)
        return out

    def ecc(self) -> list[dict[str, Any]]:
        """Volatile (since driver load) ECC counts and row-remapping state per device."""
        m = self.m
        out = []
        for i, h in enumerate(self.handles):
            mode = _try(lambda h=h: m.nvmlDeviceGetEccMode(h))
            if not mode or not mode[0]:
                out.append({"index": i, "enabled": False})
                continue
            rec: dict[str, Any] = {"index": i, "enabled": True}
            for key, kind in (("uncorrected", m.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
                              ("corrected", m.NVML_MEMORY_ERROR_TYPE_CORRECTED)):
                rec[key] = _try(lambda h=h, kind=kind: int(m.nvmlDeviceGetTotalEccErrors(h, kind, m.NVML_VOLATILE_ECC)))
            remap = _try(lambda h=h: m.nvmlDeviceGetRemappedRows(h))
            if remap:
                rec["remap_pending"], rec["remap_failed"] = bool(remap[2]), bool(remap[3])
            out.append(rec)
        return out

    def sample(self) -> list[tuple[int, str, float, str]]:
        """(device index, metric, value, unit) for every counter this device answers."""
        m = self.m
        out: list[tuple[int, str, float, str]] = []
        for i, h in enumerate(self.handles):
            p = _try(lambda h=h: m.nvmlDeviceGetPowerUsage(h))
            if p is not None:
                out.append((i, "gpu_power", p / 1000.0, "W"))
            t = _try(lambda h=h: m.nvmlDeviceGetTemperature(h, m.NVML_TEMPERATURE_GPU))
            if t is not None:
                out.append((i, "gpu_temperature", float(t), "C"))
            for metric, clk in (("gpu_sm_clock", m.NVML_CLOCK_SM), ("gpu_mem_clock", m.NVML_CLOCK_MEM)):
                c = _try(lambda h=h, clk=clk: m.nvmlDeviceGetClockInfo(h, clk))
                if c is not None:
                    out.append((i, metric, float(c), "MHz"))
            u = _try(lambda h=h: m.nvmlDeviceGetUtilizationRates(h))
            if u is not None:
                out.append((i, "gpu_utilization", float(u.gpu), "%"))
            mem = _try(lambda h=h: m.nvmlDeviceGetMemoryInfo(h))
            if mem is not None:
                out.append((i, "gpu_memory_used", float(mem.used), "bytes"))
            reasons = getattr(m, "nvmlDeviceGetCurrentClocksEventReasons", None) \
                or m.nvmlDeviceGetCurrentClocksThrottleReasons
            r = _try(lambda h=h, reasons=reasons: reasons(h))
            if r is not None:
                thermal = m.nvmlClocksThrottleReasonSwThermalSlowdown | m.nvmlClocksThrottleReasonHwThermalSlowdown
                power = m.nvmlClocksThrottleReasonSwPowerCap | getattr(m, "nvmlClocksThrottleReasonHwPowerBrakeSlowdown", 0)
                out.append((i, "gpu_throttle_thermal", float(bool(r & thermal)), ""))
                out.append((i, "gpu_throttle_power", float(bool(r & power)), ""))
        return out


# Bits of the SMU's independent throttle status (amdgpu's SMU_THROTTLER_*_BIT): 0-15 power
# limits (PPT, SPL, FPPT, SPPT), 16-31 current limits (TDC, EDC), 32-47 temperatures (GPU, memory,
# hotspot, VR, liquid, VR_HOT), 48-49 PROCHOT.
INDEP_POWER_MASK = 0xFFFF
INDEP_CURRENT_MASK = 0xFFFF << 16
INDEP_THERMAL_MASK = (0xFFFF << 32) | (0x3 << 48)
# MI300's GPU metrics leave throttle_status unset; they count, instead, how long each limiter
# was active (accumulated residency counters): any growth between two samples is throttling.
THERMAL_RESIDENCY = ("socket_thm_residency_acc", "vr_thm_residency_acc", "hbm_thm_residency_acc",
                     "prochot_residency_acc")
POWER_RESIDENCY = ("ppt_residency_acc",)


def _number(v: Any) -> float | None:
    """AMD SMI answers "N/A" (or a max-int sentinel) for a counter a GPU does not fill."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if v in (0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF):
        return None
    return float(v)


def amd_throttle(gm: dict[str, Any], previous: dict[str, float] | None) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Throttle readings from one AMD SMI GPU-metrics table: ``gpu_throttle_thermal`` and
    ``gpu_throttle_power`` from ``indep_throttle_status`` when set, else from the growth of the
    residency counters since ``previous`` (MI300); ``gpu_throttle`` from ``throttle_status``
    (older GPUs) when that is all there is. Returns (readings, counters to pass next time)."""
    out: list[tuple[str, float]] = []
    counters = {k: v for k in THERMAL_RESIDENCY + POWER_RESIDENCY if (v := _number(gm.get(k))) is not None}
    indep = gm.get("indep_throttle_status")
    if _number(indep) is not None:
        bits = int(indep)
        out.append(("gpu_throttle_thermal", float(bool(bits & INDEP_THERMAL_MASK))))
        out.append(("gpu_throttle_power", float(bool(bits & (INDEP_POWER_MASK | INDEP_CURRENT_MASK)))))
    elif counters and previous is not None:
        def grew(keys: tuple[str, ...]) -> float | None:
            deltas = [counters[k] - previous[k] for k in keys if k in counters and k in previous]
            return float(any(d > 0 for d in deltas)) if deltas else None

        for metric, keys in (("gpu_throttle_thermal", THERMAL_RESIDENCY), ("gpu_throttle_power", POWER_RESIDENCY)):
            value = grew(keys)
            if value is not None:
                out.append((metric, value))
    if not out and _number(gm.get("throttle_status")) is not None:
        out.append(("gpu_throttle", float(bool(gm["throttle_status"]))))
    return out, counters


def amd_clock(info: Any) -> float | None:
    """MHz from ``amdsmi_get_clock_info``: the field is ``clk`` from ROCm 6.2 on, ``cur_clk`` before."""
    if not isinstance(info, dict):
        return None
    for key in ("clk", "cur_clk"):
        v = _number(info.get(key))
        if v is not None:
            return v
    return None


class AmdSmi:
    """AMD devices through the AMD SMI Python library (ROCm 6+), initialised once per process."""

    vendor = "AMD"

    def __init__(self, mod: Any) -> None:
        self.m = mod
        self.handles = list(mod.amdsmi_get_processor_handles())
        self._residency: dict[int, dict[str, float]] = {}  # last residency counters per device

    def versions(self) -> dict[str, str]:
        m = self.m
        v: dict[str, str] = {}
        info = _try(lambda: m.amdsmi_get_gpu_driver_info(self.handles[0])) if self.handles else None
        if isinstance(info, dict) and info.get("driver_version"):
            v["amdgpu_driver"] = str(info["driver_version"])
        lib = _try(m.amdsmi_get_lib_version)
        if isinstance(lib, dict):
            v["amdsmi"] = ".".join(str(lib[k]) for k in ("major", "minor", "release") if k in lib)
        return v

    def devices(self) -> list[dict[str, Any]]:
        m = self.m
        out = []
        for i, h in enumerate(self.handles):
            asic = _try(lambda h=h: m.amdsmi_get_gpu_asic_info(h))
            asic = asic if isinstance(asic, dict) else {}
            vram = _number(_try(lambda h=h: m.amdsmi_get_gpu_memory_total(h, m.AmdSmiMemoryType.VRAM)))
            out.append({
                "index": i, "vendor": "AMD", "source": "amdsmi",
                "name": _known(asic.get("market_name")),
                "uuid": _known(_try(lambda h=h: m.amdsmi_get_gpu_device_uuid(h))),
                "serial": _known(asic.get("asic_serial")),
                "pci": _known(_try(lambda h=h: m.amdsmi_get_gpu_device_bdf(h))),
                "memory_bytes": int(vram) if vram is not None and vram > 0 else None,
                "vbios": _known(_vbios(_try(lambda h=h: m.amdsmi_get_gpu_vbios_info(h)))),
                # "N/A" would also win over the partition that sysfs reads for the same GPU
                "compute_partition": _known(_try(lambda h=h: m.amdsmi_get_gpu_compute_partition(h))),
                "memory_partition": _known(_try(lambda h=h: m.amdsmi_get_gpu_memory_partition(h))),
            })
        return out

    def ecc(self) -> list[dict[str, Any]]:
        m = self.m
        out = []
        for i, h in enumerate(self.handles):
            c = _try(lambda h=h: m.amdsmi_get_gpu_total_ecc_count(h))
            if not isinstance(c, dict):
                out.append({"index": i, "enabled": False})
                continue
            out.append({"index": i, "enabled": True, "uncorrected": c.get("uncorrectable_count"),
                        "corrected": c.get("correctable_count")})
        return out

    def sample(self) -> list[tuple[int, str, float, str]]:
        m = self.m
        out: list[tuple[int, str, float, str]] = []
        for i, h in enumerate(self.handles):
            p = _try(lambda h=h: m.amdsmi_get_power_info(h))
            p = p if isinstance(p, dict) else {}
            # the max-int sentinels too: 65535 W or 65535 C is a counter not filled, not a reading
            watts = _number(p.get("current_socket_power"))
            if watts is None:
                watts = _number(p.get("average_socket_power"))
            if watts is not None:
                out.append((i, "gpu_power", watts, "W"))
            t = _number(_try(lambda h=h: m.amdsmi_get_temp_metric(
                h, m.AmdSmiTemperatureType.HOTSPOT, m.AmdSmiTemperatureMetric.CURRENT)))
            if t is not None:
                out.append((i, "gpu_temperature", t, "C"))
            for metric, clk in (("gpu_sm_clock", "GFX"), ("gpu_mem_clock", "MEM")):
                c = amd_clock(_try(lambda h=h, clk=clk: m.amdsmi_get_clock_info(h, getattr(m.AmdSmiClkType, clk))))
                if c is not None:
                    out.append((i, metric, c, "MHz"))
            a = _try(lambda h=h: m.amdsmi_get_gpu_activity(h))
            gfx = _number(a.get("gfx_activity")) if isinstance(a, dict) else None
            if gfx is not None:
                out.append((i, "gpu_utilization", gfx, "%"))
            used = _number(_try(lambda h=h: m.amdsmi_get_gpu_memory_usage(h, m.AmdSmiMemoryType.VRAM)))
            if used is not None:
                out.append((i, "gpu_memory_used", used, "bytes"))
            gm = _try(lambda h=h: m.amdsmi_get_gpu_metrics_info(h))
            if isinstance(gm, dict):
                readings, self._residency[i] = amd_throttle(gm, self._residency.get(i))
                out += [(i, metric, value, "") for metric, value in readings]
        return out


def _known(v: Any) -> str | None:
    """A text AMD SMI answered, None for its "N/A" (a field the GPU or driver does not fill) or
    for an answer that is no text at all."""
    v = _text(v)
    if not isinstance(v, str) or not v.strip() or v.strip().upper() == "N/A":
        return None
    return v.strip()


def _bytes(v: Any) -> int | None:
    """A memory size NVML answered, None unless it is a positive whole number."""
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _vbios(info: Any) -> str | None:
    """AMD SMI names the field ``version`` (ROCm 6.1+) or ``vbios_version`` (6.0)."""
    if not isinstance(info, dict):
        return None
    return info.get("version") or info.get("vbios_version")


def _short_bdf(bus_id: str) -> str:
    """NVML's ``00000000:3B:00.0`` -> sysfs's ``0000:3b:00.0``."""
    dom, _, rest = bus_id.partition(":")
    return f"{dom[-4:]}:{rest}".lower() if rest else bus_id.lower()


def _open(name: str, factory: Callable[[], Any]) -> Any:
    with _lock:
        if name in _cache:
            return _cache[name]
        try:
            _cache[name] = factory()
        except Exception as e:  # noqa: BLE001 - a missing library or driver means "not available"
            unavailable[name] = f"{type(e).__name__}: {e}".strip(": ")
            _cache[name] = None
        return _cache[name]


def _make_nvml() -> Nvml:
    import pynvml  # from nvidia-ml-py

    pynvml.nvmlInit()
    return Nvml(pynvml)


def _make_amdsmi() -> AmdSmi:
    import amdsmi

    amdsmi.amdsmi_init(amdsmi.AmdSmiInitFlags.INIT_AMD_GPUS)
    return AmdSmi(amdsmi)


def nvml() -> Nvml | None:
    return _open("nvml", _make_nvml)


def amdsmi() -> AmdSmi | None:
    return _open("amdsmi", _make_amdsmi)


def libraries() -> list[Nvml | AmdSmi]:
    """The vendor libraries that initialised here and see at least one GPU."""
    return [lib for lib in (nvml(), amdsmi()) if lib is not None and lib.handles]
