"""Collective benchmarks measured as nccl-tests measures them (doc/PERFORMANCE.md).

The one table of per-op rules is ``families/collectives/spec.py``; here ``config`` holds the
validated configuration, ``data`` the deterministic inputs and exact expected outputs, ``calls``
the PyTorch calls, ``rank`` the per-rank sweep.
"""
