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


def test_a_server_may_name_outcomes_by_exception() -> None:
    metrics = ToolMetrics(
        "commontest_named", outcome_of=lambda exc: "timeout" if isinstance(exc, TimeoutError) else "crash"
    )
    for error in (TimeoutError("slow"), KeyError("bug"), KeyError("bug")):
        with pytest.raises(type(error)), metrics.observe("read"):
            raise error
    assert sample("commontest_named_tool_calls_total", tool="read", outcome="timeout") == 1
    assert sample("commontest_named_tool_calls_total", tool="read", outcome="crash") == 2
    assert sample("commontest_named_tool_calls_total", tool="read", outcome="error") == 0
