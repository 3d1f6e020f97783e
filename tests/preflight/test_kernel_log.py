"""Tests of clusterbench.preflight.kernel_log: gPU and PCIe errors in the kernel log."""

from host_doubles import LOG

from clusterbench.preflight import kernel_log


def test_kernel_log_parse():
    found = [(f.kind, f.severity, f.device, f.detail) for f in kernel_log.parse(LOG)]
    assert found == [
        ("xid", "fail", "0000:3b:00", "Xid 79"),
        ("xid", "warning", "0000:3b:00", "Xid 13"),  # an application fault, not the hardware
        ("aer", "warning", "0000:01:00.0", "Corrected"),
        ("aer", "warning", "0000:00:01.1", "Corrected"),
        ("aer", "fail", "0000:81:00.0", "Uncorrected (Fatal)"),
        ("amdgpu", "fail", "0000:c1:00.0", "GPU reset"),
        ("amdgpu", "warning", "0000:c1:00.0", "page fault"),
        ("amdgpu", "fail", "", "ring gfx_0.0.0 timeout"),
        ("xid", "fail", "0000:5d:00", "Xid 48"),
    ]
    assert kernel_log.parse("[ 0.0] Linux version 6.8\n[ 1.0] pcieport: AER: enabled\n") == []


def test_kernel_log_read_file_and_missing(tmp_path):
    p = tmp_path / "dmesg.txt"
    p.write_text(LOG)
    findings, source = kernel_log.scan(p)
    assert findings == kernel_log.parse(LOG) and findings and source == str(p)
    findings, why = kernel_log.scan(tmp_path / "nope.txt")
    assert findings is None and "cannot read" in why


def test_kernel_log_live_read_never_raises():
    text, source = kernel_log.read()
    assert (text is None) == (source.startswith("/dev/kmsg:"))  # text, or the reason it is unreadable


def test_uncorrected_non_fatal_aer_is_not_reported_as_fatal():
    """`Uncorrected (Non-Fatal)` holds the word `Fatal`: the evidence said `Uncorrected (Fatal)`."""
    log = ("[ 31.0] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0\n"
           "[ 31.1] nvidia 0000:01:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction "
           "Layer, (Requester ID)\n"
           "[ 32.0] pcieport 0000:80:01.0: AER: Uncorrected (Fatal) error received: 0000:81:00.0\n")
    found = [(f.severity, f.device, f.detail) for f in kernel_log.parse(log)]
    assert found == [("fail", "0000:01:00.0", "Uncorrected (Non-Fatal)"),
                     ("fail", "0000:01:00.0", "Uncorrected (Non-Fatal)"),
                     ("fail", "0000:81:00.0", "Uncorrected (Fatal)")]
