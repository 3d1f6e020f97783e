"""Tests of clusterbench.envinfo.gpulib."""

from types import SimpleNamespace

import pytest
from gpu_fakes import NVMLError, _odd_nvml, fake_amdsmi
from gpu_fakes import fake_amdsmi as _fake_amdsmi

from clusterbench.envinfo import gpulib
from clusterbench.envinfo.gpulib import AmdSmi, Nvml


def _fake_nvml(throttle=0x0):
    def not_supported(*_a):
        raise NVMLError("Not Supported")

    return SimpleNamespace(
        NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1, NVML_MEMORY_ERROR_TYPE_CORRECTED=0, NVML_VOLATILE_ECC=0,
        NVML_TEMPERATURE_GPU=0, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
        nvmlClocksThrottleReasonSwThermalSlowdown=0x20, nvmlClocksThrottleReasonHwThermalSlowdown=0x40,
        nvmlClocksThrottleReasonSwPowerCap=0x4, nvmlClocksThrottleReasonHwPowerBrakeSlowdown=0x80,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlSystemGetDriverVersion=lambda: "550.54.15",
        nvmlSystemGetCudaDriverVersion=lambda: 12040,
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",
        nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetSerial=not_supported,
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=b"00000000:3B:00.0" if h == "h0" else "00000000:5D:00.0"),
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=85520809984, used=1 << 30),
        nvmlDeviceGetVbiosVersion=lambda h: "96.00.74.00.01",
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700000,
        nvmlDeviceGetMigMode=lambda h: [0, 1] if h == "h1" else [0, 0],
        nvmlDeviceGetEccMode=lambda h: [1, 1] if h == "h0" else [0, 0],
        nvmlDeviceGetTotalEccErrors=lambda h, kind, counter: 2 if kind == 1 else 5,
        nvmlDeviceGetRemappedRows=lambda h: (0, 0, 1, 0),
        nvmlDeviceGetPowerUsage=lambda h: 312_500,
        nvmlDeviceGetTemperature=lambda h, s: 61,
        nvmlDeviceGetClockInfo=lambda h, c: 1980 if c == 1 else 2619,
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=97, memory=40),
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: throttle,
    )


def _nvml_or_skip():
    pytest.importorskip("pynvml", reason="nvidia-ml-py not installed")
    lib = gpulib.nvml()
    if lib is None or not lib.handles:
        pytest.skip(f"NVML did not initialise here: {gpulib.unavailable.get('nvml', 'no GPU')}")
    return lib


def test_nvml_devices():
    lib = Nvml(_fake_nvml())
    assert lib.versions() == {"nvidia_driver": "550.54.15", "cuda_driver": "12.4"}
    d0, d1 = lib.devices()
    assert d0["name"] == "NVIDIA H100 80GB HBM3" and d0["pci"] == "0000:3b:00.0" and d1["pci"] == "0000:5d:00.0"
    assert d0["serial"] is None  # Not Supported: that field only
    assert d0["memory_bytes"] == 85520809984 and d0["power_limit_w"] == 700.0
    assert d1["mig"] == {"current": False, "pending": True}


def test_nvml_ecc():
    e0, e1 = Nvml(_fake_nvml()).ecc()
    assert e0 == {"index": 0, "enabled": True, "uncorrected": 2, "corrected": 5, "remap_pending": True,
                  "remap_failed": False}
    assert e1 == {"index": 1, "enabled": False}


def test_nvml_sample_and_throttle_bits():
    rows = Nvml(_fake_nvml(throttle=0x40)).sample()
    got = {(i, m): (v, u) for i, m, v, u in rows}
    assert got[(0, "gpu_power")] == (312.5, "W") and got[(0, "gpu_temperature")] == (61.0, "C")
    assert got[(1, "gpu_sm_clock")] == (1980.0, "MHz") and got[(1, "gpu_mem_clock")] == (2619.0, "MHz")
    assert got[(0, "gpu_utilization")] == (97.0, "%") and got[(0, "gpu_memory_used")] == (float(1 << 30), "bytes")
    assert got[(0, "gpu_throttle_thermal")] == (1.0, "") and got[(0, "gpu_throttle_power")] == (0.0, "")
    idle = {(i, m): v for i, m, v, _ in Nvml(_fake_nvml(throttle=0x1)).sample()}  # GPU idle: not a throttle
    assert idle[(0, "gpu_throttle_thermal")] == 0.0 and idle[(0, "gpu_throttle_power")] == 0.0


def test_amdsmi_mapping():
    lib = AmdSmi(fake_amdsmi())
    assert lib.versions() == {"amdgpu_driver": "6.8.5", "amdsmi": "24.6.2"}
    (d,) = lib.devices()
    assert (d["name"], d["pci"], d["compute_partition"], d["memory_partition"], d["vbios"]) == \
        ("AMD Instinct MI300X", "0000:0c:00.0", "CPX", "NPS4", "113-M3000100-102")
    assert lib.ecc() == [{"index": 0, "enabled": True, "uncorrected": 0, "corrected": 3}]
    got = {m: (v, u) for _, m, v, u in lib.sample()}
    assert got["gpu_power"] == (654.0, "W")  # the current power is N/A: the average stands in
    assert got["gpu_temperature"] == (71.0, "C") and got["gpu_sm_clock"] == (2100.0, "MHz")
    assert got["gpu_mem_clock"] == (1300.0, "MHz") and got["gpu_utilization"] == (88.0, "%")
    assert got["gpu_memory_used"] == (float(4 << 30), "bytes")
    assert "gpu_throttle" not in got  # metrics table not supported: left out, not invented


def test_amdsmi_clock_field_before_and_after_rocm_6_2():
    from clusterbench.envinfo.gpulib import amd_clock

    assert amd_clock({"clk": 2100, "min_clk": 500}) == 2100.0          # ROCm >= 6.2
    assert amd_clock({"cur_clk": 1900, "min_clk": 500}) == 1900.0      # ROCm 6.0 / 6.1
    assert amd_clock({"clk": "N/A", "cur_clk": 1800}) == 1800.0
    assert amd_clock({"clk": "N/A"}) is None and amd_clock(None) is None
    fake = fake_amdsmi()
    fake.amdsmi_get_clock_info = lambda h, c: {"cur_clk": 2000 if c == "gfx" else 1200}
    got = {m: v for _, m, v, _u in AmdSmi(fake).sample()}
    assert got["gpu_sm_clock"] == 2000.0 and got["gpu_mem_clock"] == 1200.0


def test_mi300_throttling_from_residency_counters():
    """MI300: throttle_status is N/A; the accumulated residency counters grow while throttled."""
    fake = fake_amdsmi()
    metrics = {"throttle_status": "N/A", "indep_throttle_status": "N/A", "accumulation_counter": 100,
               "prochot_residency_acc": 0, "ppt_residency_acc": 50, "socket_thm_residency_acc": 7,
               "vr_thm_residency_acc": 0, "hbm_thm_residency_acc": 0}
    fake.amdsmi_get_gpu_metrics_info = lambda h: dict(metrics)
    lib = AmdSmi(fake)
    first = {m: v for _, m, v, _u in lib.sample()}
    assert "gpu_throttle_power" not in first and "gpu_throttle" not in first   # no interval yet
    metrics.update(accumulation_counter=200, ppt_residency_acc=90)             # power-capped since
    second = {m: v for _, m, v, _u in lib.sample()}
    assert second["gpu_throttle_power"] == 1.0 and second["gpu_throttle_thermal"] == 0.0
    metrics.update(accumulation_counter=300, hbm_thm_residency_acc=4)
    third = {m: v for _, m, v, _u in lib.sample()}
    assert third["gpu_throttle_power"] == 0.0 and third["gpu_throttle_thermal"] == 1.0


def test_independent_throttle_status_bits_and_old_throttle_status():
    from clusterbench.envinfo.gpulib import amd_throttle

    hot = amd_throttle({"indep_throttle_status": 1 << 32, "throttle_status": "N/A"}, None)[0]
    assert dict(hot) == {"gpu_throttle_thermal": 1.0, "gpu_throttle_power": 0.0}
    capped = amd_throttle({"indep_throttle_status": 1 << 0}, None)[0]
    assert dict(capped) == {"gpu_throttle_thermal": 0.0, "gpu_throttle_power": 1.0}
    assert dict(amd_throttle({"indep_throttle_status": 1 << 16}, None)[0])["gpu_throttle_power"] == 1.0
    assert dict(amd_throttle({"indep_throttle_status": 1 << 49}, None)[0])["gpu_throttle_thermal"] == 1.0
    mi200 = amd_throttle({"throttle_status": 3}, None)[0]                 # only the summary word
    assert mi200 == [("gpu_throttle", 1.0)]
    assert amd_throttle({"throttle_status": 0xFFFFFFFF}, None)[0] == []   # a sentinel, not a reading


def test_nvml_absence_is_clean():
    # With nvidia-ml-py installed but no NVIDIA driver, init fails: None plus a reason, no exception.
    lib = gpulib.nvml()
    if lib is None:
        assert gpulib.unavailable["nvml"]
    assert gpulib.nvml() is lib  # initialised (or failed) once per process


def test_amdsmi_absence_is_clean():
    lib = gpulib.amdsmi()
    if lib is None:
        assert gpulib.unavailable["amdsmi"]


@pytest.mark.gpu
def test_nvml_devices_and_samples():
    lib = _nvml_or_skip()
    devs = lib.devices()
    assert devs and all(d["name"] and d["memory_bytes"] for d in devs)
    metrics = {m for _, m, _, _ in lib.sample()}
    assert {"gpu_power", "gpu_temperature", "gpu_sm_clock", "gpu_memory_used"} <= metrics
    assert all("enabled" in e for e in lib.ecc())


@pytest.mark.gpu
def test_amdsmi_devices_and_samples():
    pytest.importorskip("amdsmi", reason="amdsmi not installed")
    lib = gpulib.amdsmi()
    if lib is None or not lib.handles:
        pytest.skip(f"AMD SMI did not initialise here: {gpulib.unavailable.get('amdsmi', 'no GPU')}")
    devs = lib.devices()
    assert devs and all(d["name"] for d in devs)
    assert {m for _, m, _, _ in lib.sample()} & {"gpu_power", "gpu_temperature"}


def test_short_bdf():
    assert gpulib._short_bdf("00000000:3B:00.0") == "0000:3b:00.0"


def test_nvml_answers_of_an_odd_shape_are_unknown_values():
    lib = Nvml(_odd_nvml())
    assert lib.versions() == {}
    (d,) = lib.devices()
    assert d["name"] == "NVIDIA H100 80GB HBM3"
    assert (d["memory_bytes"], d["mig"], d["pci"], d["uuid"]) == (None, None, None, None)


def test_amdsmi_answers_of_an_odd_shape_are_unknown_values():
    m = SimpleNamespace(
        AmdSmiMemoryType=SimpleNamespace(VRAM=0),
        amdsmi_get_processor_handles=lambda: ["h0"],
        amdsmi_get_gpu_asic_info=lambda h: "N/A",
        amdsmi_get_gpu_memory_total=lambda h, t: "N/A",
        amdsmi_get_gpu_device_uuid=lambda h: "N/A",
        amdsmi_get_gpu_device_bdf=lambda h: "N/A",
        amdsmi_get_gpu_vbios_info=lambda h: {"version": "N/A"},
        amdsmi_get_gpu_compute_partition=lambda h: "N/A",
        amdsmi_get_gpu_memory_partition=lambda h: "NPS1",
    )
    (d,) = AmdSmi(m).devices()
    assert (d["name"], d["serial"], d["uuid"], d["pci"], d["memory_bytes"], d["vbios"]) == (None,) * 6
    assert d["compute_partition"] is None and d["memory_partition"] == "NPS1"


def test_amdsmi_max_int_sentinels_are_no_readings():
    fake = _fake_amdsmi()
    fake.amdsmi_get_power_info = lambda h: {"current_socket_power": 0xFFFF, "average_socket_power": 650}
    fake.amdsmi_get_temp_metric = lambda h, t, m: 0xFFFF
    fake.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 0xFFFF, "umc_activity": 0xFFFF}
    fake.amdsmi_get_gpu_memory_usage = lambda h, t: 0xFFFFFFFFFFFFFFFF
    got = {m: v for _, m, v, _u in AmdSmi(fake).sample()}
    assert got["gpu_power"] == 650.0   # the current power is unfilled: the average stands in
    assert "gpu_temperature" not in got and "gpu_utilization" not in got and "gpu_memory_used" not in got
