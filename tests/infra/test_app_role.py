"""The local Postgres has an application role the services connect as: no superuser and no DDL, only the
rows of the schemas the owner role migrated. Run on a private Postgres (free ports, a temporary folder)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from stacgis_common.testing import RunningService, call_tool, free_port, run_service

ROOT = Path(__file__).resolve().parents[2]


class PrivateInfra:
    def __init__(self, folder: Path) -> None:
        self.pg_port, self.redis_port = free_port(), free_port()
        self.env = {
            **os.environ,
            "STACGIS_LOCAL_DIR": str(folder),
            "STACGIS_PG_PORT": str(self.pg_port),
            "STACGIS_REDIS_PORT": str(self.redis_port),
        }

    def dsn(self, role: str) -> str:
        return f"postgresql://{role}:{role}@127.0.0.1:{self.pg_port}/stacgis"

    def infra(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "scripts/local_infra.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


@pytest.fixture(scope="module")
def infra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateInfra]:
    private = PrivateInfra(tmp_path_factory.mktemp("app-role") / "local")
    started = private.infra("up", "--no-model-server")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield private
    finally:
        private.infra("down")


@pytest.fixture(scope="module")
def embeddings() -> Iterator[RunningService]:
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "scripted", "HF_HUB_OFFLINE": "1"}
    with run_service("stacgis_model_server", env, port) as service:
        yield service


async def fetch(dsn: str, sql: str) -> object:
    connection = await asyncpg.connect(dsn)
    try:
        return await connection.fetchval(sql)
    finally:
        await connection.close()


def migrate(infra: PrivateInfra, module: str, prefix: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"{module}.migrate"],
        cwd=ROOT,
        env={**infra.env, f"{prefix}DATABASE_URL": infra.dsn("stacgis")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_application_role_is_no_superuser_and_creates_nothing(infra: PrivateInfra) -> None:
    app = infra.dsn("stacgis_app")
    assert (
        asyncio.run(
            fetch(app, "SELECT rolsuper OR rolcreatedb OR rolcreaterole FROM pg_roles WHERE rolname = current_user")
        )
        is False
    )
    for statement in (
        "CREATE TABLE public.planted (x int)",
        "CREATE SCHEMA planted",
        "CREATE EXTENSION IF NOT EXISTS vector",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            asyncio.run(fetch(app, statement))
    # A second `up` on the running cluster keeps the role as it is.
    again = infra.infra("up", "--no-model-server")
    assert again.returncode == 0, again.stderr


@pytest.mark.asyncio
async def test_services_work_as_the_application_role_on_schemas_the_owner_migrated(
    infra: PrivateInfra, embeddings: RunningService
) -> None:
    migrate(infra, "stacgis_knowledge", "KNOWLEDGE_")
    migrate(infra, "stacgis_gateway", "GATEWAY_")
    app = infra.dsn("stacgis_app")
    port = free_port()
    knowledge_env = {
        "KNOWLEDGE_PORT": str(port),
        "KNOWLEDGE_DATABASE_URL": app,
        "KNOWLEDGE_EMBEDDING_BASE_URL": embeddings.url,
        "KNOWLEDGE_EMBEDDING_MODEL": "all-minilm",
        "KNOWLEDGE_EMBEDDING_DIMENSION": "384",
    }
    with run_service("stacgis_knowledge", knowledge_env, port, ready_path="/readyz") as knowledge:
        content = "# Peat bogs\n\nThe raised bogs of the Hautes Fagnes store carbon in metres of peat.\n"
        error, added = await call_tool(knowledge.url, "add_knowledge", {"title": "Bogs", "content": content})
        assert not error, added
        error, found = await call_tool(knowledge.url, "search_knowledge", {"query": "Hautes Fagnes peat bogs"})
        assert not error and found["results"][0]["document_id"] == added["document_id"], found

    for module, prefix in (("stacgis_vector", "VECTOR_"), ("stacgis_memory", "MEMORY_")):
        migrate(infra, module, prefix)
        port = free_port()
        env = {
            f"{prefix}PORT": str(port),
            f"{prefix}DATABASE_URL": app,
            f"{prefix}EMBEDDING_BASE_URL": embeddings.url,
            f"{prefix}EMBEDDING_MODEL": "all-minilm",
            f"{prefix}EMBEDDING_DIMENSION": "384",
        }
        with run_service(module, env, port, ready_path="/readyz") as service:
            if module == "stacgis_memory":
                error, stored = await call_tool(service.url, "add_memory", {"content": "Prefers metres"})
                assert not error, stored

    port = free_port()
    gateway_env = {
        "GATEWAY_PORT": str(port),
        "GATEWAY_DATABASE_URL": app,
        "GATEWAY_REDIS_URL": f"redis://127.0.0.1:{infra.redis_port}/0",
        "GATEWAY_AUTH_MODE": "anonymous",
    }
    with run_service("stacgis_gateway", gateway_env, port) as gateway:
        listed = httpx.get(gateway.url + "/api/v1/chat/sessions", timeout=10)
        assert listed.status_code == 200 and listed.json() == []
    # The rows were written by the application role into tables the owner owns.
    owner = await fetch(infra.dsn("stacgis"), "SELECT tableowner FROM pg_tables WHERE tablename = 'documents'")
    assert owner == "stacgis"


def chart_role_sql() -> str:
    """The application-role script the chart's migrations Job runs, as the chart renders it."""
    import helm_python
    import yaml

    with helm_python.Chart.load(ROOT / "charts" / "stacgis") as chart:
        files = chart.render(values={}, name="demo", namespace="stacgis")
    for path, text in files.items():
        if not path.endswith((".yaml", ".yml")):
            continue
        for doc in yaml.safe_load_all(text):
            if doc and doc["kind"] == "ConfigMap" and doc["metadata"]["name"].endswith("-postgresql-roles"):
                sql: str = doc["data"]["app-role.sql"]
                return sql
    raise AssertionError("the chart renders no roles ConfigMap")


def run_chart_sql(infra: PrivateInfra, script: Path, role: str, password: str) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import local_infra

    done = subprocess.run(
        [str(local_infra.pg_bin() / "psql"), "-v", "ON_ERROR_STOP=1", "-v", f"app_role={role}", "-f", str(script)],
        env={
            **infra.env,
            "PGHOST": "127.0.0.1",
            "PGPORT": str(infra.pg_port),
            "PGDATABASE": "stacgis",
            "PGUSER": "stacgis",
            "PGPASSWORD": "stacgis",
            "APP_PASSWORD": password,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.asyncio
async def test_the_charts_role_script_makes_a_role_of_rows_only(infra: PrivateInfra, tmp_path: Path) -> None:
    script = tmp_path / "app-role.sql"
    script.write_text(chart_role_sql())
    # As the migrations Job does: the role first, then the owner creates a schema (a migration).
    run_chart_sql(infra, script, "chart_app", "first-password")
    owner = await asyncpg.connect(infra.dsn("stacgis"))
    try:
        await owner.execute(
            "CREATE SCHEMA chart_demo; CREATE TABLE chart_demo.notes (id bigserial PRIMARY KEY, text text)"
        )
    finally:
        await owner.close()
    # Run again (an upgrade) with a new password from the Secret: idempotent, the password follows.
    run_chart_sql(infra, script, "chart_app", "second-password")
    app = await asyncpg.connect(f"postgresql://chart_app:second-password@127.0.0.1:{infra.pg_port}/stacgis")
    try:
        assert await app.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user") is False
        await app.execute("INSERT INTO chart_demo.notes (text) VALUES ('rows are fine')")
        assert await app.fetchval("SELECT count(*) FROM chart_demo.notes") == 1
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app.execute("CREATE TABLE chart_demo.planted (x int)")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app.execute("DROP TABLE chart_demo.notes")
    finally:
        await app.close()
