"""The loader is idempotent, and a restarted server answers from what Postgres kept."""

from __future__ import annotations

import pytest
from vector_helpers import run_loader

from stacgis_common.testing import RunningService, call_tool, free_port, run_service


@pytest.mark.asyncio
async def test_second_load_skips_unchanged_datasets(vector_server: RunningService, vector_env: dict[str, str]) -> None:
    _, before = await call_tool(vector_server.url, "list_vector_datasets", {})
    rerun = run_loader(vector_env)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("skipped") == 4, rerun.stdout
    _, after = await call_tool(vector_server.url, "list_vector_datasets", {})
    assert [(d["id"], d["feature_count"], d["loaded_at"]) for d in after["datasets"]] == [
        (d["id"], d["feature_count"], d["loaded_at"]) for d in before["datasets"]
    ]


@pytest.mark.asyncio
async def test_changed_options_reload_only_the_dataset_they_shape(vector_env: dict[str, str]) -> None:
    # A different city cut-off is a different source state for `cities` only.
    reload = run_loader(vector_env, "--datasets", "cities,countries", "--min-population", "5000000")
    assert reload.returncode == 0, reload.stderr
    assert "cities: loaded" in reload.stdout and "countries: already loaded" in reload.stdout
    restore = run_loader(vector_env, "--datasets", "cities")
    assert restore.returncode == 0 and "cities: loaded" in restore.stdout


@pytest.mark.asyncio
async def test_restarted_server_keeps_everything(vector_env: dict[str, str]) -> None:
    port = free_port()
    env = {**vector_env, "VECTOR_PORT": str(port)}
    with run_service("stacgis_vector", env, port) as first:
        _, before = await call_tool(first.url, "search_vector_features", {"query": "Berlin", "limit": 3})
        first.kill()
    with run_service("stacgis_vector", env, port) as second:
        _, after = await call_tool(second.url, "search_vector_features", {"query": "Berlin", "limit": 3})
    assert [hit["ref"] for hit in after["results"]] == [hit["ref"] for hit in before["results"]]
    assert after["results"][0]["name"] == "Berlin"
