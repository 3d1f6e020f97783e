"""Test doubles for the node benchmarks: kernels that compute the wrong thing, so the checks
must catch them. Ranks import this module by name (tests/ is on their sys.path)."""

from __future__ import annotations

from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.gemm import ops as real_ops
from clusterbench.bench.gemm.ops import TorchGemm
from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.kernels import TorchStream


class WrongTriad(TorchStream):
    """Triad with the scalar slightly off: a = b + (s + 1e-3) * c."""

    def triad(self) -> None:
        self.a.copy_(self.b).add_(self.c, alpha=self.scalar + 1e-3)


class WrongOneElement(TorchStream):
    """Copy that misses the last element."""

    def copy(self) -> None:
        self.c[:-1].copy_(self.a[:-1])


class WrongGemm(TorchGemm):
    @staticmethod
    def gemm_call(ops, dtype, alpha, beta):
        """The real GEMM, then one output element off by a little more than rounding would allow."""
        call = real_ops.gemm_call(ops, dtype, alpha, beta)

        def wrong() -> None:
            call()
            ops.d[0, 0, 0] += 1.0

        return wrong


class SlowStart(TorchStream):
    """Real kernels whose first two calls each take 20 ms longer: the first timed iteration (the
    second; stream drops the first) is far slower than the rest."""

    calls = 0

    def copy(self) -> None:
        import time

        SlowStart.calls += 1
        if SlowStart.calls <= 2:
            time.sleep(0.02)
        super().copy()


class SmallArrays(TorchStream):
    """The real kernels on arrays of at most 1024 elements, whatever size is asked: a run of the
    default size (2^25 or more) costs milliseconds, with its rows labelled as the size asked.
    Only for runs without the check (the gold values count the size asked)."""

    def __init__(self, array_size: int, dtype: str, device: object) -> None:
        super().__init__(min(array_size, 1024), dtype, device)


NODE_TARGETS = (stream_main.main, gemm_main.main)
