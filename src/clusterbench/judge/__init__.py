"""Judging stored measurements: statistics, outliers, profiles, validation, comparison, theory."""
