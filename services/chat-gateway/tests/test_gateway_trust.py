"""Trust boundaries at the gateway: requests without an identity are limited by client address (as the
trusted proxy passed it), identity headers are believed only from configured proxies and never when they
disagree, and slow request bodies end in 408."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from gateway_helpers import gateway_env
from pydantic import ValidationError

from stacgis_common.testing import RunningService, checked_error_body, error_of, free_port, run_service
from stacgis_gateway.config import GatewaySettings

SESSIONS = "/api/v1/chat/sessions"


def fresh_window() -> None:
    """Start counting at the beginning of a rate-limit minute, so the window cannot roll over mid-test."""
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)


@pytest.fixture(scope="module")
def limited_gateway(pg_dsn: str, redis_url: str, orchestrator: RunningService) -> Iterator[RunningService]:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX=f"trust-{uuid.uuid4().hex[:6]}:",
        GATEWAY_AUTH_MODE="anonymous",
        GATEWAY_ANONYMOUS_RATE_LIMIT_PER_MINUTE="3",
        GATEWAY_TRUSTED_PROXIES="127.0.0.1/32",
        GATEWAY_BODY_READ_TIMEOUT_SECONDS="1",
        GATEWAY_BODY_DEADLINE_SECONDS="3",
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        yield gateway


def test_dropping_the_cookie_does_not_escape_the_rate_limit(limited_gateway: RunningService) -> None:
    url = limited_gateway.url + SESSIONS

    def bare(forwarded_for: str, **extra: object) -> httpx.Response:
        """One request without a cookie (no cookie jar kept between requests), as if from the proxy."""
        return httpx.get(url, headers={"X-Forwarded-For": forwarded_for}, timeout=10, **extra)  # type: ignore[arg-type]

    fresh_window()
    # The trusted proxy (127.0.0.1) names the client; each request without a cookie is a new identity.
    first = [bare("203.0.113.5") for _ in range(3)]
    assert [r.status_code for r in first] == [200, 200, 200]
    refused = bare("203.0.113.5")
    assert int(refused.headers["Retry-After"]) >= 1
    assert error_of(refused, 429)["message"].startswith("at most 3 requests without a session cookie per minute")
    # Addresses the client wrote in front of the proxy's entry change nothing.
    assert error_of(bare("198.51.100.1, 203.0.113.5"), 429)["code"] == "rate_limited"
    # Another client behind the same proxy has its own budget, and a kept cookie is an identity.
    assert bare("203.0.113.6").status_code == 200
    kept = bare("203.0.113.5", cookies={"stacgis_uid": first[0].cookies["stacgis_uid"]})
    assert kept.status_code == 200

    # A peer that is not a trusted proxy is limited by its own address, whatever X-Forwarded-For it sends.
    codes = []
    for n in range(5):
        untrusted = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(transport=untrusted, timeout=10) as client:
            codes.append(client.get(url, headers={"X-Forwarded-For": f"192.0.2.{n}"}).status_code)
    assert codes == [200, 200, 200, 429, 429]


def slow_post(port: int, body: bytes, pauses: list[float]) -> tuple[int, str]:
    """POST a JSON body one byte per pause; returns the status and body of the gateway's answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        head = (
            f"POST /api/v1/chat/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        connection.sendall(head.encode())
        try:
            for index, pause in enumerate(pauses):
                connection.sendall(body[index : index + 1])
                time.sleep(pause)
        except OSError:
            pass  # the gateway answered and closed while we were still sending
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, answer.partition(b"\r\n\r\n")[2].decode()


def test_a_stalled_body_is_ended_with_408(limited_gateway: RunningService) -> None:
    body = b'{"message": "hello"}'
    status, text = slow_post(int(limited_gateway.url.rsplit(":", 1)[1]), body, [0.0, 2.5])
    assert status == 408, text
    stalled = checked_error_body(json.loads(text), "body")
    assert stalled["code"] == "body_timeout" and stalled["message"] == "body: request body stalled for more than 1 s"


def test_a_trickled_body_is_ended_at_the_deadline(limited_gateway: RunningService) -> None:
    # Every byte arrives well inside the read timeout, but the whole body never within the deadline.
    body = b'{"message": "' + b"x" * 40 + b'"}'
    status, text = slow_post(int(limited_gateway.url.rsplit(":", 1)[1]), body, [0.3] * len(body))
    assert status == 408, text
    assert checked_error_body(json.loads(text), "body")["message"] == "body: request body not complete within 3 s"


def test_trusted_header_mode_trusts_no_proxy_by_default() -> None:
    assert GatewaySettings().trusted_proxies == []
    with pytest.raises(ValidationError, match="GATEWAY_TRUSTED_PROXIES"):
        GatewaySettings(auth_mode="trusted-header")


@pytest.fixture(scope="module")
def two_header_gateway(pg_dsn: str, redis_url: str, orchestrator: RunningService) -> Iterator[RunningService]:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX=f"two-{uuid.uuid4().hex[:6]}:",
        GATEWAY_TRUSTED_USER_HEADER="X-Auth-Request-User,X-Forwarded-User",
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        yield gateway


def test_a_clients_own_identity_header_never_wins(two_header_gateway: RunningService) -> None:
    url = two_header_gateway.url + SESSIONS
    with httpx.Client(timeout=10) as client:
        assert client.get(url, headers={"X-Forwarded-User": "olga"}).status_code == 200
        assert client.get(url, headers={"X-Auth-Request-User": "olga", "X-Forwarded-User": "olga"}).status_code == 200
        # The proxy set X-Forwarded-User; the client added X-Auth-Request-User, listed first. Refused, not believed.
        mixed = client.get(url, headers={"X-Auth-Request-User": "victim", "X-Forwarded-User": "olga"})
        assert "disagree" in error_of(mixed, 401)["message"]
        # The client's value and the proxy's in the same header.
        twice = client.get(url, headers=[("X-Forwarded-User", "victim"), ("X-Forwarded-User", "olga")])
        assert "more than once" in error_of(twice, 401)["message"]
