"""Per-tool metrics count outcomes and never swallow the tool's error."""

import pytest
from prometheus_client import REGISTRY

from stacgis_common.tool_metrics import ToolMetrics

METRICS = ToolMetrics("commontest")


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_calls_are_counted_by_outcome_and_timed() -> None:
    with METRICS.observe("search"):
        pass
    with pytest.raises(ValueError, match="bad"), METRICS.observe("search"):
        raise ValueError("bad")
    assert sample("commontest_tool_calls_total", tool="search", outcome="ok") == 1
    assert sample("commontest_tool_calls_total", tool="search", outcome="error") == 1
    assert sample("commontest_tool_duration_seconds_count", tool="search") == 2
