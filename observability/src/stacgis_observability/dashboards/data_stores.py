"""Data stores: Postgres (pgvector) and Redis as the services' database clients see them."""

from __future__ import annotations

from ..panels import DashboardSpec, PanelSpec, Query, Row, quantile, rate, rising, sel, volume

DB = "db_client_operation_duration_seconds"
POSTGRES = 'db_system="postgresql"'
REDIS = 'db_system="redis"'
STORES = 'container=~"postgresql|redis"'

postgres = Row(
    "Postgres + pgvector",
    (
        PanelSpec(
            title="Postgres queries per second by service",
            description=(
                "Statements each service sent to Postgres, from the asyncpg client spans "
                f"({DB}_count). vector-, knowledge- and memory-tools run the pgvector searches; the gateway "
                "stores chat history."
            ),
            unit="ops",
            queries=(Query(f"sum by (service) ({rate(DB + '_count', POSTGRES)})", "{{service}}"),),
            thresholds=volume(200),
        ),
        PanelSpec(
            title="p95 Postgres query time by service",
            description=(
                f"95th percentile of a Postgres statement per service ({DB}), network included. pgvector "
                "similarity searches dominate for the tool servers; above 100 ms check the HNSW indexes and "
                "the database's CPU."
            ),
            unit="s",
            queries=(Query(quantile(0.95, DB, "service", POSTGRES), "{{service}}"),),
            thresholds=rising(0.1, 0.5),
        ),
        PanelSpec(
            title="p95 Postgres time by statement kind",
            description=(
                f"95th percentile per statement kind (SELECT, INSERT, ...) and service ({DB}); writes slower "
                "than reads by far point at lock contention or a full disk."
            ),
            unit="s",
            queries=(Query(quantile(0.95, DB, "service, db_operation", POSTGRES), "{{service}} {{db_operation}}"),),
            thresholds=rising(0.1, 0.5),
            width=24,
        ),
    ),
)

redis = Row(
    "Redis",
    (
        PanelSpec(
            title="Redis commands per second by service",
            description=(
                f"Redis commands per service from the redis client spans ({DB}_count): sessions, the "
                "concurrency gate, run event streams and approvals."
            ),
            unit="ops",
            queries=(Query(f"sum by (service) ({rate(DB + '_count', REDIS)})", "{{service}}"),),
            thresholds=volume(1000),
        ),
        PanelSpec(
            title="p95 Redis command time by command",
            description=(
                f"95th percentile per command and service ({DB}). Redis answers in well under a millisecond "
                "locally; tens of ms mean network trouble or a blocked server (slow Lua, large streams)."
            ),
            unit="s",
            queries=(Query(quantile(0.95, DB, "service, db_operation", REDIS), "{{service}} {{db_operation}}"),),
            thresholds=rising(0.01, 0.05),
        ),
    ),
)

pods = Row(
    "Store pods",
    (
        PanelSpec(
            title="Postgres and Redis CPU",
            description="CPU cores used by the in-chart Postgres and Redis containers (cAdvisor).",
            unit="short",
            queries=(
                Query(
                    f"sum by (pod) (rate({sel('container_cpu_usage_seconds_total', STORES)}[$__rate_interval]))",
                    "{{pod}}",
                ),
            ),
            thresholds=rising(0.8, 1.5),
            cluster_only="cAdvisor",
        ),
        PanelSpec(
            title="Persistent volume usage",
            description=(
                "Used share of each persistent volume claim of the release (kubelet volume stats): Postgres "
                "data and the Ollama models. Postgres stops accepting writes when its volume is full."
            ),
            unit="percentunit",
            queries=(
                Query(
                    f"max by (persistentvolumeclaim) ({sel('kubelet_volume_stats_used_bytes')}"
                    f" / {sel('kubelet_volume_stats_capacity_bytes')})",
                    "{{persistentvolumeclaim}}",
                ),
            ),
            thresholds=rising(0.75, 0.9),
            min=0,
            max=1,
            cluster_only="kubelet",
        ),
    ),
)

DASHBOARD = DashboardSpec(
    uid="stacgis-data-stores",
    title="stacgis / Data stores",
    description="Postgres (with pgvector) and Redis as the stacgis services use them.",
    file_name="stacgis-data-stores.json",
    rows=(postgres, redis, pods),
)
