"""The local Postgres has an application role the services connect as: no superuser and no DDL, only the
rows of the schemas the owner role migrated. Run on a private Postgres (free ports, a temporary folder)."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio

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
def infra(module_private_local: Path) -> Iterator[PrivateInfra]:
    private = PrivateInfra(module_private_local)
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


def render_chart(values: dict[str, Any]) -> list[dict[str, Any]]:
    import helm_python
    import yaml

    with helm_python.Chart.load(ROOT / "charts" / "stacgis") as chart:
        files = chart.render(values=values, name="demo", namespace="stacgis")
    return [
        doc
        for path, text in files.items()
        if path.endswith((".yaml", ".yml"))
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def chart_roles(values: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], list[dict[str, Any]]]:
    """The roles ConfigMap's files, the migrations Job's `database-roles` init container and the Job's
    volumes, as the chart renders them for `values`."""
    docs = render_chart(values)
    (files,) = [
        d["data"] for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-postgresql-roles")
    ]
    (job,) = [
        d["spec"]["template"]["spec"]
        for d in docs
        if d["kind"] == "Job" and d["metadata"]["name"].endswith("-migrations")
    ]
    (init,) = [c for c in job.get("initContainers", []) if c["name"] == "database-roles"]
    return files, init, job["volumes"]


def chart_role_sql() -> str:
    """The application-role script the chart's migrations Job runs, as the chart renders it."""
    files, _, _ = chart_roles({})
    return files["app-role.sql"]


def run_as_kubernetes(
    values: dict[str, Any], secrets: dict[tuple[str, str], str], folder: Path
) -> subprocess.CompletedProcess[str]:
    """Run the rendered init container's own command here as the kubelet would: its env (plain values: no
    secret is in it), its volumes' files (the roles ConfigMap, the Secret's items taken from `secrets`) in
    folders standing in for their mount paths, psql from the local Postgres build first on the PATH."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import local_infra

    files, init, volumes = chart_roles(values)
    env: dict[str, str] = {}
    for entry in init.get("env", []):
        assert "value" in entry, f"a secret in the environment: {entry}"
        env[entry["name"]] = entry["value"]
    mounts = {}
    for mount in init["volumeMounts"]:
        assert mount["readOnly"] is True, mount
        (volume,) = [v for v in volumes if v["name"] == mount["name"]]
        if "configMap" in volume:
            contents = files
        else:
            source = volume["secret"]
            contents = {item["path"]: secrets[(source["secretName"], item["key"])] for item in source["items"]}
        target = folder / mount["name"]
        target.mkdir(parents=True, exist_ok=True)
        for name, text in contents.items():
            (target / name).write_text(text)
        mounts[mount["mountPath"].rstrip("/") + "/"] = f"{target}/"
    shell, flags, script = init["command"]
    assert (shell, flags) == ("sh", "-ec"), init["command"]
    for mount_path, local in mounts.items():
        script = script.replace(mount_path, local)
    return subprocess.run(
        ["sh", "-ec", script],
        env={"PATH": f"{local_infra.pg_bin()}:{os.environ['PATH']}", "HOME": str(folder), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


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


class ExternalServer:
    """A database on the private server set up as an operator of an external Postgres would: an owner that is
    no superuser and owns the database, and (unless told otherwise) the login role they made for the services."""

    def __init__(self, infra: PrivateInfra, database: str) -> None:
        self.infra, self.database = infra, database
        self.owner, self.owner_password = f"{database}_owner", secrets.token_urlsafe(16)
        self.app_password = secrets.token_urlsafe(16)

    def url(self, role: str, password: str) -> str:
        return f"postgresql://{role}:{password}@127.0.0.1:{self.infra.pg_port}/{self.database}"

    @property
    def owner_url(self) -> str:
        return self.url(self.owner, self.owner_password)

    def values(self, app_role: str) -> dict[str, Any]:
        external = {"existingSecret": "db-urls", "appUsername": app_role}
        return {"postgresql": {"enabled": False, "external": external}}

    def grant(self, app_role: str, folder: Path) -> subprocess.CompletedProcess[str]:
        # The operator's Secret: the owner's URL under the chart's default key (a file); nothing else reaches psql.
        return run_as_kubernetes(self.values(app_role), {("db-urls", "database-owner-url"): self.owner_url}, folder)


@pytest_asyncio.fixture
async def external(infra: PrivateInfra) -> AsyncIterator[ExternalServer]:
    server = ExternalServer(infra, f"ext_{secrets.token_hex(4)}")
    admin = await asyncpg.connect(infra.dsn("stacgis"))
    try:
        await admin.execute(f"CREATE ROLE {server.owner} LOGIN PASSWORD '{server.owner_password}'")
        await admin.execute(f"CREATE DATABASE {server.database} OWNER {server.owner}")
        yield server
    finally:
        await admin.execute(f"DROP DATABASE IF EXISTS {server.database} WITH (FORCE)")
        for role in await admin.fetch("SELECT rolname FROM pg_roles WHERE rolname LIKE $1", f"{server.database}%"):
            await admin.execute(f"DROP OWNED BY {role['rolname']}")
            await admin.execute(f"DROP ROLE {role['rolname']}")
        await admin.close()


async def role_record(infra: PrivateInfra, role: str) -> asyncpg.Record | None:
    admin = await asyncpg.connect(infra.dsn("stacgis"))
    try:
        return await admin.fetchrow(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolcanlogin, rolpassword FROM pg_authid WHERE rolname = $1",
            role,
        )
    finally:
        await admin.close()


@pytest.mark.asyncio
async def test_on_an_external_server_the_charts_script_only_grants_rows_to_the_operators_role(
    infra: PrivateInfra, external: ExternalServer, tmp_path: Path
) -> None:
    app_role = f"{external.database}_app"
    admin = await asyncpg.connect(infra.dsn("stacgis"))
    try:
        await admin.execute(f"CREATE ROLE {app_role} LOGIN PASSWORD '{external.app_password}'")
    finally:
        await admin.close()
    before = await role_record(infra, app_role)

    owner = await asyncpg.connect(external.owner_url)
    try:
        # A schema migrated before the grants run (an upgrade) and one after (the first install's migrations).
        await owner.execute(
            "CREATE SCHEMA before_grants; CREATE TABLE before_grants.notes (id bigserial PRIMARY KEY, text text)"
        )
        first = external.grant(app_role, tmp_path)
        assert first.returncode == 0, first.stdout + first.stderr
        await owner.execute(
            "CREATE SCHEMA after_grants; CREATE TABLE after_grants.notes (id bigserial PRIMARY KEY, text text)"
        )
        for schema in ("before_grants", "after_grants"):
            await owner.executemany(
                f"INSERT INTO {schema}.notes (text) VALUES ($1)", [("owner row a",), ("owner row b",)]
            )
        again = external.grant(app_role, tmp_path)
        assert again.returncode == 0, again.stdout + again.stderr

        # The role, its attributes and the password the operator gave it are as they were.
        assert await role_record(infra, app_role) == before
        app = await asyncpg.connect(external.url(app_role, external.app_password))
        try:
            for schema in ("before_grants", "after_grants"):
                table = f"{schema}.notes"
                seen = [tuple(r) for r in await app.fetch(f"SELECT id, text FROM {table} ORDER BY id")]
                assert seen == [tuple(r) for r in await owner.fetch(f"SELECT id, text FROM {table} ORDER BY id")]
                new_id = await app.fetchval(f"INSERT INTO {table} (text) VALUES ('from the app') RETURNING id")
                await app.execute(f"UPDATE {table} SET text = 'edited by the app' WHERE id = $1", new_id)
                assert await owner.fetchval(f"SELECT text FROM {table} WHERE id = $1", new_id) == "edited by the app"
                await app.execute(f"DELETE FROM {table} WHERE id = $1", new_id)
                assert await owner.fetchval(f"SELECT count(*) FROM {table} WHERE id = $1", new_id) == 0
                for statement in (
                    f"CREATE TABLE {schema}.planted (x int)",
                    f"ALTER TABLE {table} ADD COLUMN planted int",
                    f"DROP TABLE {table}",
                    f"TRUNCATE {table}",
                ):
                    with pytest.raises(asyncpg.InsufficientPrivilegeError):
                        await app.execute(statement)
            for statement in ("CREATE TABLE public.planted (x int)", "CREATE SCHEMA planted"):
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await app.execute(statement)
            # Every table it can write is one the owner owns.
            owners = await app.fetch(
                "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
                " AND has_table_privilege(current_user, format('%I.%I', schemaname, tablename), 'INSERT')"
            )
            assert [r["tableowner"] for r in owners] == [external.owner]
        finally:
            await app.close()
    finally:
        await owner.close()


@pytest.mark.asyncio
async def test_on_an_external_server_a_missing_application_role_fails_naming_it(
    infra: PrivateInfra, external: ExternalServer, tmp_path: Path
) -> None:
    missing = f"{external.database}_nobody"
    done = external.grant(missing, tmp_path)
    assert done.returncode != 0
    assert f'application role "{missing}" does not exist' in done.stderr, done.stderr
    # Nothing was created, and ON_ERROR_STOP stopped before any grant.
    assert await role_record(infra, missing) is None
    owner = await asyncpg.connect(external.owner_url)
    try:
        assert await owner.fetchval("SELECT count(*) FROM pg_default_acl") == 0
    finally:
        await owner.close()


@pytest.mark.asyncio
async def test_the_owner_or_a_superuser_is_refused_as_the_application_role(
    infra: PrivateInfra, external: ExternalServer, tmp_path: Path
) -> None:
    superuser = await role_record(infra, "stacgis")
    assert superuser is not None and superuser["rolsuper"] is True
    for role in (external.owner, "stacgis"):
        done = external.grant(role, tmp_path)
        assert done.returncode != 0
        assert f'application role "{role}" must not be the owner {external.owner}' in done.stderr, done.stderr
