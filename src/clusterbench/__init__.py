"""clusterbench: measure, validate and compare AI cluster hardware."""

__version__ = "0.1.0"
