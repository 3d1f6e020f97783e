"""Tests of clusterbench.bench.collectives.nccl: the ctypes binding of the NCCL/RCCL library."""

from __future__ import annotations

import ctypes

import pytest
from fake_nccl import COMM, FakeNccl

from clusterbench.bench.collectives import nccl
from clusterbench.families.collectives.spec import DTYPES, REDOPS


def _lib(**kw) -> nccl.Nccl:
    return nccl.Nccl(FakeNccl(**kw), "/opt/nccl/lib/libnccl.so.2")


def _maps(tmp_path, *paths: str) -> str:
    lines = ["7f00-7f01 r--p 00000000 00:00 0 [vdso]", "7f10-7f11 r-xp 00000000 08:01 42 /usr/lib/libc.so.6"]
    lines += [f"7f2{i}-7f3{i} r-xp 00000000 08:01 4{i} {p}" for i, p in enumerate(paths)]
    lines += [lines[-1]] if paths else []   # a library maps several segments: one path, once
    f = tmp_path / "maps"
    f.write_text("\n".join(lines) + "\n")
    return str(f)


def test_enumerations_are_nccl_h_in_nccl_tests_order():
    # nccl-tests' test_typenames and test_opnames list the enumerations in their numeric order
    assert list(nccl.TYPES) == list(DTYPES) and list(nccl.TYPES.values()) == list(range(len(DTYPES)))
    assert list(nccl.REDOPS) == list(REDOPS) and list(nccl.REDOPS.values()) == list(range(5))
    assert ctypes.sizeof(nccl.UniqueId) == 128


def test_every_call_is_declared_before_use_and_the_version_read():
    lib = _lib(version=22105)
    assert lib.version == (2, 21, 5) and lib.label == "NCCL 2.21.5"
    for name, args in {**nccl.SIGNATURES, **nccl.OPTIONAL}.items():
        if name == "ncclAllToAll":   # RCCL's
            continue
        fn = getattr(lib.lib, name)
        assert fn.argtypes == args and fn.restype is ctypes.c_int, name
    assert lib.lib.ncclGetErrorString.restype is ctypes.c_char_p
    assert lib.alltoall == "ncclAlltoAll"


@pytest.mark.parametrize("code,version", [(23007, (2, 30, 7)), (20906, (2, 9, 6)), (2804, (2, 8, 4))])
def test_version_codes_as_nccl_h_writes_them(code, version):
    assert nccl.split_version(code) == version and nccl.version_code(*version) == code


def test_a_library_without_an_all_to_all_call_falls_back_to_send_and_receive():
    assert _lib(missing=("ncclAlltoAll", "ncclAllToAll")).alltoall is None
    rccl = nccl.Nccl(FakeNccl(missing=("ncclAlltoAll",)), "/opt/rocm/lib/librccl.so.1")
    assert rccl.label.startswith("RCCL") and rccl.alltoall == "ncclAllToAll"


def test_a_missing_required_symbol_names_the_library():
    with pytest.raises(nccl.NcclError, match="libnccl.so.2 has no ncclGroupEnd"):
        _lib(missing=("ncclGroupEnd",))


def test_a_failed_call_is_one_line_with_the_librarys_words():
    lib = _lib(fail={"ncclGetUniqueId": 3})
    with pytest.raises(nccl.NcclError) as e:
        lib.unique_id()
    assert str(e.value) == ("ncclGetUniqueId: invalid usage: the fake refused it (/opt/nccl/lib/libnccl.so.2)")


def test_one_rank_per_process_joins_without_a_group_several_inside_one():
    lib = _lib(nranks=4)
    uid = lib.unique_id()
    assert len(uid) == 128 and uid.startswith(b"\x7f" * 16)
    devices: list[int] = []

    class On:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            devices.append(self.i)

        def __exit__(self, *exc):
            return False

    assert lib.init_ranks(4, uid, [2], On) == [COMM + 2]
    assert [c.name for c in lib.lib.calls][-1:] == ["ncclCommInitRank"]
    init = lib.lib.named("ncclCommInitRank")[0].args
    assert bytes(init["uid"].internal) == uid[:16].rstrip(b"\0") and (init["nranks"], init["rank"]) == (4, 2)
    lib.lib.calls.clear()
    # two GPUs of one process (nccl-tests -g 2): both inits inside one group, each on its device
    assert lib.init_ranks(4, uid, [0, 1], On) == [COMM, COMM + 1]
    assert [c.name for c in lib.lib.calls] == ["ncclGroupStart", "ncclCommInitRank", "ncclCommInitRank",
                                                 "ncclGroupEnd"]
    assert devices == [0, 0, 1]
    with pytest.raises(nccl.NcclError, match="got 5 bytes"):
        lib.init_ranks(1, b"short", [0], On)


def test_destroy_aborts_after_a_failure():
    lib = _lib()
    comm = lib.init_ranks(1, lib.unique_id(), [0], lambda i: _Null())[0]
    lib.destroy(comm, abort=True)
    assert lib.lib.calls[-1].name == "ncclCommAbort" and comm not in lib.lib.made


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_a_call_with_a_wrong_argument_type_fails_as_ctypes_would():
    lib = _lib()
    with pytest.raises(TypeError):
        lib.lib.ncclAllReduce(1, 2, "eight", 7, 0, COMM, 0)


def test_the_library_is_found_among_those_the_process_mapped(tmp_path):
    path = "/py/site-packages/nvidia/nccl/lib/libnccl.so.2"
    opened: list[str] = []

    def opener(p):
        opened.append(p)
        return FakeNccl(version=22807)

    lib = nccl.load(_maps(tmp_path, path), opener, expected=(2, 28, 7))
    assert lib.path == path and opened == [path] and lib.version == (2, 28, 7)
    assert nccl.loaded_libraries(_maps(tmp_path, "/opt/rocm/lib/librccl.so.1.0")) == ["/opt/rocm/lib/librccl.so.1.0"]


def test_no_library_loaded_is_one_line_naming_what_was_looked_for(tmp_path):
    with pytest.raises(nccl.NcclError) as e:
        nccl.load(_maps(tmp_path), lambda p: pytest.fail("nothing to open"))
    assert str(e.value) == ("--engine nccl: no NCCL/RCCL library is loaded in this process (looked for "
                            f"libnccl.so* or librccl.so* in {tmp_path}/maps, where PyTorch's CUDA/ROCm build "
                            "maps it); use --engine torch")
    with pytest.raises(nccl.NcclError, match="no NCCL/RCCL library"):
        nccl.load(str(tmp_path / "no-such-maps"))


def test_a_library_other_than_torchs_version_is_refused(tmp_path):
    maps = _maps(tmp_path, "/usr/lib/libnccl.so.2")
    with pytest.raises(nccl.NcclError, match=r"PyTorch reports NCCL 2\.21\.5 but the library loaded is "
                                             r"/usr/lib/libnccl.so.2 NCCL 2\.30\.7"):
        nccl.load(maps, lambda p: FakeNccl(), expected=(2, 21, 5))


def test_a_library_that_cannot_be_opened_says_which(tmp_path):
    def opener(p):
        raise OSError(f"{p}: cannot open shared object file")

    with pytest.raises(nccl.NcclError, match="cannot use /x/libnccl.so.2: /x/libnccl.so.2: cannot open"):
        nccl.load(_maps(tmp_path, "/x/libnccl.so.2"), opener)


def _torch_nccl() -> tuple[int, ...] | None:
    import torch  # noqa: F401 - loads the library when its CUDA/ROCm build has one

    return nccl.torch_nccl_version() if nccl.loaded_libraries() else None


def test_the_real_library_torch_loaded_answers_without_a_gpu():
    """The binding's signatures against the real library: version, unique id and error text work
    without a GPU; making a communicator without one fails in one line with NCCL's words."""
    expected = _torch_nccl()
    if expected is None:
        pytest.skip("this torch build loads no NCCL/RCCL library")
    lib = nccl.load(expected=expected)
    assert lib.version[:len(expected)] == expected
    uid = lib.unique_id()
    assert len(uid) == 128 and any(uid)
    assert lib.error_text(1).startswith("unhandled cuda error")
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        has_gpu = False
    if has_gpu:
        return
    with pytest.raises(nccl.NcclError) as e:
        lib.init_ranks(1, uid, [0], lambda i: _Null())
    assert "\n" not in str(e.value) and str(e.value).startswith("ncclCommInitRank (rank 0 of 1): ")
