"""Every service the reliability suites start talks to Postgres as the application role, as in `make up`
and the chart: no superuser, no role or database creation. Checked on the connections the running
processes hold (Postgres's own view of them, matched by client port), not on the configuration they
were given."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import asyncpg
import httpx
import local_infra  # scripts/, on the path since conftest imported private_stack
import psutil
from private_stack import PrivateStack

from stacgis_common.testing import RunningService

# The role `make up` and the chart run the services as, never the owner that migrates.
APP_USER = local_infra.APP_USER


def postgres_client_ports(pid: int, pg_port: int) -> set[int]:
    """The local ports of the process's TCP connections to the Postgres on `pg_port`."""
    return {
        connection.laddr.port
        for connection in psutil.Process(pid).net_connections(kind="tcp")
        if connection.raddr and connection.raddr.port == pg_port
    }


async def roles_by_client_port(owner_dsn: str) -> dict[int, asyncpg.Record]:
    """Who each client connection to `owner_dsn`'s database is logged in as, read as the owner."""
    connection = await asyncpg.connect(owner_dsn)
    try:
        rows = await connection.fetch(
            "SELECT a.client_port, a.usename, r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolbypassrls"
            " FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename"
            " WHERE a.datname = current_database() AND a.client_port IS NOT NULL AND a.pid <> pg_backend_pid()"
        )
    finally:
        await connection.close()
    return {row["client_port"]: row for row in rows}


def assert_application_role(owner_dsn: str, pids: dict[str, int], using_postgres: set[str]) -> None:
    """Every connection of the processes `pids` (name -> pid) to `owner_dsn`'s database is the application
    role's; those in `using_postgres` must hold at least one."""
    assert urlsplit(owner_dsn).username != APP_USER
    pg_port = urlsplit(owner_dsn).port
    assert pg_port is not None
    ports = {name: postgres_client_ports(pid, pg_port) for name, pid in pids.items()}
    roles = asyncio.run(roles_by_client_port(owner_dsn))
    for name in pids:
        # A connection closed between the two looks is in the first only.
        seen = [roles[port] for port in ports[name] if port in roles]
        if name in using_postgres:
            assert seen, f"{name} holds no connection to Postgres"
        for role in seen:
            assert role["usename"] == APP_USER, f"{name} connects as {role['usename']}, not {APP_USER}"
            assert not (role["rolsuper"] or role["rolcreatedb"] or role["rolcreaterole"] or role["rolbypassrls"]), (
                name,
                dict(role),
            )


def postgres_in_readiness(url: str) -> bool:
    """Whether the service's readiness depends on Postgres; asking also makes it use (and so hold open)
    a pooled connection while we look."""
    response = httpx.get(url + "/readyz", timeout=10)
    if "postgres" not in response.json().get("checks", {}):
        return False
    assert response.status_code == 200, (url, response.text)
    return True


def test_every_service_of_the_private_stack_connects_as_the_non_superuser_application_role(
    hostile_stack: PrivateStack,
) -> None:
    procs = [proc for proc in hostile_stack.processes() if proc is not hostile_stack.ingress]
    using_postgres = {proc.name for proc in procs if postgres_in_readiness(proc.url)}
    # At least the gateways and the pgvector tool servers, whatever else reports Postgres.
    stores = [hostile_stack.tools[name] for name in ("vector", "knowledge", "memory") if name in hostile_stack.tools]
    assert {proc.name for proc in [*hostile_stack.gateways, *stores]} <= using_postgres
    pids = {proc.name: proc.pid for proc in hostile_stack.processes() if proc.pid is not None}
    assert_application_role(hostile_stack.infra.pg_dsn, pids, using_postgres)


def test_the_tool_servers_of_the_service_suites_connect_as_the_application_role(
    pg_dsn: str, vector_server: RunningService, knowledge_server: RunningService, memory_server: RunningService
) -> None:
    # The servers the hostile tool calls go to, started by the fixtures of their own suites.
    servers = {"vector-tools": vector_server, "knowledge-tools": knowledge_server, "memory-tools": memory_server}
    for name, server in servers.items():
        assert postgres_in_readiness(server.url), name
    pids = {name: server.process.pid for name, server in servers.items()}
    assert_application_role(pg_dsn, pids, set(servers))
