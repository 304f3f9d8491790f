"""Every stacgis dashboard, in the order operators read them."""

from __future__ import annotations

from ..panels import DashboardSpec
from . import agent_llm, data_stores, overview, pods_gpu, tools

DASHBOARDS: tuple[DashboardSpec, ...] = (
    overview.DASHBOARD,
    agent_llm.DASHBOARD,
    tools.DASHBOARD,
    data_stores.DASHBOARD,
    pods_gpu.DASHBOARD,
)
