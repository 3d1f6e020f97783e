"""Prometheus' own parser of the text format (prometheus-client, the metrics extra): a test
module that imports it is skipped where it is missing."""

from __future__ import annotations

import pytest

prom_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")


prom_text = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")
