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
        if cuda:
            v["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
        return {k: str(x) for k, x in v.items() if x}

    def devices(self) -> list[dict[str, Any]]:
        m = self.m
        out = []
        for i, h in enumerate(self.handles):
            mem = _try(lambda h=h: m.nvmlDeviceGetMemoryInfo(h))
            pci = _try(lambda h=h: m.nvmlDeviceGetPciInfo(h))
            mig = _try(lambda h=h: m.nvmlDeviceGetMigMode(h))
            d = {
                "index": i, "vendor": "NVIDIA", "source": "nvml",
                "name": _text(_try(lambda h=h: m.nvmlDeviceGetName(h))),
                "uuid": _text(_try(lambda h=h: m.nvmlDeviceGetUUID(h))),
                "serial": _text(_try(lambda h=h: m.nvmlDeviceGetSerial(h))),
                "pci": _text(getattr(pci, "busId", None)) if pci is not None else None,
                "memory_bytes": int(mem.total) if mem is not None else None,
                "vbios": _text(_try(lambda h=h: m.nvmlDeviceGetVbiosVersion(h))),
                "power_limit_w": _try(lambda h=h: m.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
                # MIG mode: (current, pending); 1 means enabled.
                "mig": {"current": bool(mig[0]), "pending": bool(mig[1])} if mig else None,
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


class AmdSmi:
    """AMD devices through the AMD SMI Python library (ROCm 6+), initialised once per process."""

    vendor = "AMD"

    def __init__(self, mod: Any) -> None:
        self.m = mod
        self.handles = list(mod.amdsmi_get_processor_handles())

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
            asic = _try(lambda h=h: m.amdsmi_get_gpu_asic_info(h)) or {}
            vram = _try(lambda h=h: m.amdsmi_get_gpu_memory_total(h, m.AmdSmiMemoryType.VRAM))
            out.append({
                "index": i, "vendor": "AMD", "source": "amdsmi",
                "name": asic.get("market_name"),
                "uuid": _try(lambda h=h: m.amdsmi_get_gpu_device_uuid(h)),
                "serial": asic.get("asic_serial"),
                "pci": _try(lambda h=h: m.amdsmi_get_gpu_device_bdf(h)),
                "memory_bytes": int(vram) if vram is not None else None,
                "vbios": _vbios(_try(lambda h=h: m.amdsmi_get_gpu_vbios_info(h))),
                "compute_partition": _try(lambda h=h: m.amdsmi_get_gpu_compute_partition(h)),
                "memory_partition": _try(lambda h=h: m.amdsmi_get_gpu_memory_partition(h)),
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
            p = _try(lambda h=h: m.amdsmi_get_power_info(h)) or {}
            watts = p.get("current_socket_power")
            if not isinstance(watts, (int, float)):
                watts = p.get("average_socket_power")
            if isinstance(watts, (int, float)):
                out.append((i, "gpu_power", float(watts), "W"))
            t = _try(lambda h=h: m.amdsmi_get_temp_metric(
                h, m.AmdSmiTemperatureType.HOTSPOT, m.AmdSmiTemperatureMetric.CURRENT))
            if isinstance(t, (int, float)):
                out.append((i, "gpu_temperature", float(t), "C"))
            for metric, clk in (("gpu_sm_clock", "GFX"), ("gpu_mem_clock", "MEM")):
                c = _try(lambda h=h, clk=clk: m.amdsmi_get_clock_info(h, getattr(m.AmdSmiClkType, clk)))
                if isinstance(c, dict) and isinstance(c.get("clk"), (int, float)):
                    out.append((i, metric, float(c["clk"]), "MHz"))
            a = _try(lambda h=h: m.amdsmi_get_gpu_activity(h)) or {}
            if isinstance(a.get("gfx_activity"), (int, float)):
                out.append((i, "gpu_utilization", float(a["gfx_activity"]), "%"))
            used = _try(lambda h=h: m.amdsmi_get_gpu_memory_usage(h, m.AmdSmiMemoryType.VRAM))
            if isinstance(used, (int, float)):
                out.append((i, "gpu_memory_used", float(used), "bytes"))
            gm = _try(lambda h=h: m.amdsmi_get_gpu_metrics_info(h)) or {}
            # throttle_status: nonzero while the SMU limits clocks (thermal or power).
            ts = gm.get("throttle_status")
            if isinstance(ts, (int, float)):
                out.append((i, "gpu_throttle", float(bool(ts)), ""))
        return out


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
