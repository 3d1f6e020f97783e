"""Showing results: terminal tables, JSON lines, CSV, plots and HTML."""
