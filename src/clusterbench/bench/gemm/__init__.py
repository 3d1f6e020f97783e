"""GEMM throughput through PyTorch's BLAS paths (``clusterbench gemm``)."""
