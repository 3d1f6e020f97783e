"""A stand-in for AMD SMI's Python module, answering as an MI300X in CPX/NPS4 mode would."""

from __future__ import annotations

from types import SimpleNamespace


def fake_amdsmi():
    class E:
        VRAM = "vram"
        HOTSPOT = "hotspot"
        CURRENT = "current"
        GFX = "gfx"
        MEM = "mem"

    def boom(*_a):
        raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")

    return SimpleNamespace(
        AmdSmiMemoryType=E, AmdSmiTemperatureType=E, AmdSmiTemperatureMetric=E, AmdSmiClkType=E,
        amdsmi_get_processor_handles=lambda: ["p0"],
        amdsmi_get_gpu_driver_info=lambda h: {"driver_name": "amdgpu", "driver_version": "6.8.5"},
        amdsmi_get_lib_version=lambda: {"major": 24, "minor": 6, "release": 2},
        amdsmi_get_gpu_asic_info=lambda h: {"market_name": "AMD Instinct MI300X", "asic_serial": "0x1FA8"},
        amdsmi_get_gpu_memory_total=lambda h, t: 206141652992,
        amdsmi_get_gpu_device_uuid=lambda h: "1fff74a1-0000-1000-80a8-e3b2c0d4e5f6",
        amdsmi_get_gpu_device_bdf=lambda h: "0000:0c:00.0",
        amdsmi_get_gpu_vbios_info=lambda h: {"vbios_version": "113-M3000100-102"},
        amdsmi_get_gpu_compute_partition=lambda h: "CPX",
        amdsmi_get_gpu_memory_partition=lambda h: "NPS4",
        amdsmi_get_gpu_total_ecc_count=lambda h: {"correctable_count": 3, "uncorrectable_count": 0},
        amdsmi_get_power_info=lambda h: {"current_socket_power": "N/A", "average_socket_power": 654},
        amdsmi_get_temp_metric=lambda h, t, m: 71,
        amdsmi_get_clock_info=lambda h, c: {"clk": 2100 if c == "gfx" else 1300},
        amdsmi_get_gpu_activity=lambda h: {"gfx_activity": 88, "umc_activity": "N/A"},
        amdsmi_get_gpu_memory_usage=lambda h, t: 4 << 30,
        amdsmi_get_gpu_metrics_info=boom,
    )


class NVMLError(Exception):
    pass


def _odd_nvml() -> SimpleNamespace:
    def raises(*_a):
        raise NVMLError("Unknown Error\nwith a second line")

    return SimpleNamespace(
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlSystemGetDriverVersion=raises,
        nvmlSystemGetCudaDriverVersion=lambda: "12.4",          # not the int NVML documents
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",
        nvmlDeviceGetUUID=raises, nvmlDeviceGetSerial=raises, nvmlDeviceGetVbiosVersion=raises,
        nvmlDeviceGetPciInfo=raises, nvmlDeviceGetEnforcedPowerLimit=raises,
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total="N/A"),
        nvmlDeviceGetMigMode=lambda h: 1,                       # not a (current, pending) pair
    )
