"""Every service of the private stack talks to Postgres as the application role, as in `make up` and the
chart: no superuser, no role or database creation. Checked on the connections the running processes
hold (Postgres's own view of them), not on the configuration they were given."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import asyncpg
import httpx
import local_infra  # scripts/, on the path since conftest imported private_stack
import psutil
from private_stack import PrivateStack, Proc


def postgres_client_ports(proc: Proc, pg_port: int) -> set[int]:
    """The local ports of the process's TCP connections to the stack's Postgres."""
    assert proc.pid is not None
    return {
        connection.laddr.port
        for connection in psutil.Process(proc.pid).net_connections(kind="tcp")
        if connection.raddr and connection.raddr.port == pg_port
    }


async def roles_by_client_port(stack: PrivateStack) -> dict[int, asyncpg.Record]:
    """Who each client connection to the stack's database is logged in as, read as the owner."""
    connection = await asyncpg.connect(stack.infra.pg_dsn)
    try:
        rows = await connection.fetch(
            "SELECT a.client_port, a.usename, r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolbypassrls"
            " FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename"
            " WHERE a.datname = $1 AND a.client_port IS NOT NULL AND a.pid <> pg_backend_pid()",
            stack.infra.database,
        )
    finally:
        await connection.close()
    return {row["client_port"]: row for row in rows}


def test_every_service_connects_to_postgres_as_the_non_superuser_application_role(
    hostile_stack: PrivateStack,
) -> None:
    # The services that depend on Postgres say so in their readiness report; asking for it also makes
    # each one use (and so hold open) a pooled connection while we look.
    with_postgres = []
    for proc in hostile_stack.processes():
        if proc is hostile_stack.ingress:
            continue
        response = httpx.get(proc.url + "/readyz", timeout=10)
        if "postgres" in response.json().get("checks", {}):
            assert response.status_code == 200, (proc.name, response.text)
            with_postgres.append(proc)
    # At least the gateways and the pgvector tool servers, whatever else reports Postgres.
    stores = [hostile_stack.tools[name] for name in ("vector", "knowledge", "memory") if name in hostile_stack.tools]
    assert {proc.name for proc in [*hostile_stack.gateways, *stores]} <= {proc.name for proc in with_postgres}

    # The role `make up` and the chart run the services as, never the owner that migrates.
    app_user = local_infra.APP_USER
    assert app_user != urlsplit(hostile_stack.infra.pg_dsn).username
    ports = {proc.name: postgres_client_ports(proc, hostile_stack.infra.pg_port) for proc in hostile_stack.processes()}
    roles = asyncio.run(roles_by_client_port(hostile_stack))
    for proc in hostile_stack.processes():
        # A connection closed between the two looks is in the first only.
        seen = [roles[port] for port in ports[proc.name] if port in roles]
        if proc in with_postgres:
            assert seen, f"{proc.name} holds no connection to Postgres"
        for role in seen:
            assert role["usename"] == app_user, f"{proc.name} connects as {role['usename']}, not {app_user}"
            assert not (role["rolsuper"] or role["rolcreatedb"] or role["rolcreaterole"] or role["rolbypassrls"]), (
                proc.name,
                dict(role),
            )
