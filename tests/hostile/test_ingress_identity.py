"""The local ingress (deploy/local/nginx.conf.template, as `make up` runs it) in front of a real gateway:
a client cannot escape the anonymous rate limit by dropping its cookie or by writing its own
X-Forwarded-For, and identity headers it sends never reach the gateway."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stacgis_common.testing import REPO_ROOT, RunningService, error_of, free_port, run_migrations, run_service

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import stack_ingress  # scripts/stack_ingress.py: the nginx template as `make up` renders it

SESSIONS = "/api/v1/chat/sessions"


def gateway_env(dsn: str, redis_url: str, port: int, **extra: str) -> dict[str, str]:
    return {
        "GATEWAY_PORT": str(port),
        "GATEWAY_DATABASE_URL": dsn,
        "GATEWAY_REDIS_URL": redis_url,
        "GATEWAY_REDIS_KEY_PREFIX": f"ingress-{uuid.uuid4().hex[:6]}:",
        "GATEWAY_ORCHESTRATOR_URL": "http://127.0.0.1:9",
        # The ingress on loopback is the trusted proxy, as stack.env sets it.
        "GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32",
        "GATEWAY_LOG_LEVEL": "WARNING",
        **extra,
    }


class Ingress:
    """nginx from the local template, with its paths in `folder` and `gateway_port` as /api's upstream."""

    def __init__(self, folder: Path, gateway_port: int) -> None:
        tmp = stack_ingress.temp_dirs(folder)
        dist = folder / "dist"
        dist.mkdir(exist_ok=True)
        (dist / "index.html").write_text("<!doctype html><title>stacgis</title>")
        paths = {
            "RUN": folder,
            "LOGS": folder,
            "TMP": tmp,
            "LOCAL": folder,
            "DIST": dist,
            "MIME_TYPES": "/etc/nginx/mime.types",
            "CSP": REPO_ROOT / "frontend" / "csp.conf",
        }
        self.port = free_port()
        config = stack_ingress.render_template(paths)
        config = config.replace("127.0.0.1:8080", f"127.0.0.1:{self.port}")
        config = config.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{gateway_port};")
        config = config.replace("127.0.0.1:8011", "127.0.0.1:9")
        self.config = folder / "nginx.conf"
        self.config.write_text(config)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Ingress:
        self.process = subprocess.Popen(
            ["nginx", "-p", str(self.config.parent), "-c", str(self.config), "-e", "stderr", "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                httpx.get(self.url + "/", timeout=1)
                return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the ingress did not start")

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture(scope="module")
def gateway_dsn(pg_dsn: str, app_dsn: str) -> str:
    """As deployed: the owner migrates, the gateway connects as the application role."""
    run_migrations("stacgis_gateway", {"GATEWAY_DATABASE_URL": pg_dsn})
    return app_dsn


@pytest.fixture(scope="module")
def anonymous(gateway_dsn: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ingress]:
    port = free_port()
    env = gateway_env(
        gateway_dsn, redis_url, port, GATEWAY_AUTH_MODE="anonymous", GATEWAY_ANONYMOUS_RATE_LIMIT_PER_MINUTE="3"
    )
    with run_service("stacgis_gateway", env, port), Ingress(tmp_path_factory.mktemp("ingress-anon"), port) as ingress:
        yield ingress


@pytest.fixture(scope="module")
def trusted_header(
    gateway_dsn: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RunningService, Ingress]]:
    port = free_port()
    env = gateway_env(
        gateway_dsn,
        redis_url,
        port,
        GATEWAY_AUTH_MODE="trusted-header",
        GATEWAY_TRUSTED_USER_HEADER="X-Auth-Request-User,X-Forwarded-User",
        GATEWAY_RATE_LIMIT_PER_MINUTE="0",
    )
    with (
        run_service("stacgis_gateway", env, port) as gateway,
        Ingress(tmp_path_factory.mktemp("ingress-th"), port) as ingress,
    ):
        yield gateway, ingress


def test_no_cookie_and_a_forged_forwarded_for_do_not_escape_the_limit(anonymous: Ingress) -> None:
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)  # start in a fresh rate-limit minute
    codes = [
        # No cookie jar: every request is a new anonymous identity, each claiming another address.
        httpx.get(anonymous.url + SESSIONS, headers={"X-Forwarded-For": f"198.51.100.{n}"}, timeout=10).status_code
        for n in range(5)
    ]
    assert codes == [200, 200, 200, 429, 429]


def test_identity_headers_from_the_client_never_reach_the_gateway(
    trusted_header: tuple[RunningService, Ingress],
) -> None:
    gateway, ingress = trusted_header
    headers = {"X-Auth-Request-User": "victim", "X-Forwarded-User": "victim"}
    # Straight from a trusted peer the gateway would believe them...
    assert httpx.get(gateway.url + SESSIONS, headers=headers, timeout=10).status_code == 200
    # ...but through the ingress, which sets none itself, they are gone.
    through = httpx.get(ingress.url + SESSIONS, headers=headers, timeout=10)
    refusal = error_of(through, 401)
    assert "missing user header" in refusal["message"] and refusal["code"] == "unauthenticated"
