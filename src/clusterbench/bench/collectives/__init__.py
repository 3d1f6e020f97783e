"""Collective benchmarks measured as nccl-tests measures them (doc/PERFORMANCE.md).

``spec`` holds the one table of per-op rules, ``data`` the deterministic inputs and exact
expected outputs, ``calls`` the PyTorch calls, ``rank`` the per-rank sweep.
"""
