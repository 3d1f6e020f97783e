"""Ranks: reading a launcher's environment, starting local ranks, and the per-rank context."""
