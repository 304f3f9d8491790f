"""Each auth mode accepts the right credentials and rejects forged, expired and untrusted ones."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gateway_helpers import Gateways, chat, gateway_env
from itsdangerous import TimestampSigner

from stacgis_common.testing import RunningService, error_of, free_port, run_service

ISSUER = "https://login.example.test/"
AUDIENCE = "stacgis"
COOKIE_SECRET = "test-cookie-secret-of-this-suite"
COOKIE_SALT = "stacgis-anonymous-user"
COOKIE_MAX_AGE = 3600


# jwt mode


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Jwks:
    """A JWKS document served over HTTP from a thread, as an identity provider would."""

    def __init__(self, keys: dict[str, rsa.RSAPrivateKey]) -> None:
        document = {
            "keys": [
                {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())), "kid": kid, "use": "sig"}
                for kid, key in keys.items()
            ]
        }
        body = json.dumps(document).encode()
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def token(key: rsa.RSAPrivateKey, kid: str = "k1", **overrides: Any) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "maria", "iat": now, "exp": now + 300, **overrides}
    claims = {name: value for name, value in claims.items() if value is not None}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return rsa_key()


@pytest.fixture(scope="module")
def jwt_gateway(
    pg_dsn: str, redis_url: str, orchestrator: RunningService, signing_key: rsa.RSAPrivateKey
) -> Iterator[RunningService]:
    jwks = Jwks({"k1": signing_key})
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="jwt:",
        GATEWAY_AUTH_MODE="jwt",
        GATEWAY_JWKS_URL=jwks.url,
        GATEWAY_JWT_ISSUER=ISSUER,
        GATEWAY_JWT_AUDIENCE=AUDIENCE,
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        yield gateway
    jwks.close()


@pytest.mark.asyncio
async def test_jwt_from_jwks_accepts_valid_tokens(jwt_gateway: RunningService, signing_key: rsa.RSAPrivateKey) -> None:
    bearer = {"Authorization": f"Bearer {token(signing_key)}"}
    async with httpx.AsyncClient(timeout=30) as client:
        stream = await chat(client, jwt_gateway.url, "hello from maria", bearer)
        assert stream.status == 200 and stream.names[-1] == "done"
        sessions = (await client.get(f"{jwt_gateway.url}/api/v1/chat/sessions", headers=bearer)).json()
        assert [s["id"] for s in sessions] == [stream.session_id]
        # Another subject from the same issuer is another user.
        nina = {"Authorization": f"Bearer {token(signing_key, sub='nina')}"}
        assert (await client.get(f"{jwt_gateway.url}/api/v1/chat/sessions", headers=nina)).json() == []
        history = await client.get(f"{jwt_gateway.url}/api/v1/chat/session/{stream.session_id}/history", headers=nina)
        assert error_of(history, 404) == {"field": None, "message": "session not found", "code": "not_found"}


@pytest.mark.asyncio
async def test_jwt_rejects_forged_expired_and_foreign_tokens(
    jwt_gateway: RunningService, signing_key: rsa.RSAPrivateKey
) -> None:
    now = int(time.time())
    public_pem = signing_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    bad = {
        "no token": None,
        "not a jwt": "garbage",
        "forged (another key, same kid)": token(rsa_key()),
        "unknown kid": token(signing_key, kid="k9"),
        "expired": token(signing_key, iat=now - 7200, exp=now - 3600),
        "wrong audience": token(signing_key, aud="someone-else"),
        "wrong issuer": token(signing_key, iss="https://evil.example.test/"),
        "no expiry": token(signing_key, exp=None),
        "alg none": jwt.encode(
            {"iss": ISSUER, "aud": AUDIENCE, "sub": "maria", "exp": now + 300}, None, algorithm="none"
        ),
        "HS256 keyed with the public key": _hs256_confusion(
            {"iss": ISSUER, "aud": AUDIENCE, "sub": "maria", "exp": now + 300}, public_pem
        ),
    }
    async with httpx.AsyncClient(timeout=30) as client:
        for case, value in bad.items():
            headers = {"Authorization": f"Bearer {value}"} if value else {}
            response = await client.get(f"{jwt_gateway.url}/api/v1/chat/sessions", headers=headers)
            assert response.headers["www-authenticate"] == "Bearer", case
            refusal = error_of(response, 401)
            assert refusal["message"].startswith("not authenticated: ") and refusal["code"] == "unauthenticated", case
            started = await client.post(
                f"{jwt_gateway.url}/api/v1/chat/stream", json={"message": "hi"}, headers=headers
            )
            assert error_of(started, 401)["code"] == "unauthenticated", case


def _hs256_confusion(claims: dict[str, Any], public_pem: bytes) -> str:
    """The algorithm-confusion attack: an HS256 token whose HMAC key is the (public) RSA key."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = part(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    payload = part(json.dumps(claims).encode())
    signature = hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{part(signature)}"


@pytest.mark.asyncio
async def test_jwt_with_a_configured_public_key(pg_dsn: str, redis_url: str, orchestrator: RunningService) -> None:
    key = rsa_key()
    pem = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="jwtpem:",
        GATEWAY_AUTH_MODE="jwt",
        GATEWAY_JWT_PUBLIC_KEY=pem,
        GATEWAY_JWT_ISSUER=ISSUER,
        GATEWAY_JWT_AUDIENCE=AUDIENCE,
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        async with httpx.AsyncClient(timeout=30) as client:
            good = await client.get(
                f"{gateway.url}/api/v1/chat/sessions", headers={"Authorization": f"Bearer {token(key)}"}
            )
            assert good.status_code == 200
            forged = await client.get(
                f"{gateway.url}/api/v1/chat/sessions", headers={"Authorization": f"Bearer {token(rsa_key())}"}
            )
            assert error_of(forged, 401)["message"].startswith("not authenticated: ")


def test_jwt_mode_without_keys_refuses_to_start() -> None:
    env = {"GATEWAY_AUTH_MODE": "jwt", "GATEWAY_JWT_ISSUER": ISSUER, "GATEWAY_JWT_AUDIENCE": AUDIENCE}
    result = subprocess.run(
        [sys.executable, "-m", "stacgis_gateway"],
        env={**_clean_env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "GATEWAY_JWKS_URL" in result.stderr


def _clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("GATEWAY_")}


# trusted-header mode (the shared gateways run in it, trusting 127.0.0.1 only)


@pytest.mark.asyncio
async def test_trusted_header_only_from_trusted_proxies(gateways: Gateways) -> None:
    url = f"{gateways.a.url}/api/v1/chat/sessions"
    async with httpx.AsyncClient(timeout=10) as client:
        assert (await client.get(url, headers={"X-Forwarded-User": "olga"})).status_code == 200
        missing = await client.get(url)
        assert "missing user header" in error_of(missing, 401)["message"]
        weird = await client.get(url, headers={"X-Forwarded-User": "olga smith"})
        assert error_of(weird, 401)["message"].startswith("not authenticated: ")
    # The same header from an address that is not a configured proxy is not believed.
    untrusted = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
    async with httpx.AsyncClient(transport=untrusted, timeout=10) as client:
        spoofed = await client.get(url, headers={"X-Forwarded-User": "olga", "X-Forwarded-For": "127.0.0.1"})
        assert "trusted proxy" in error_of(spoofed, 401)["message"]
        started = await client.post(
            f"{gateways.a.url}/api/v1/chat/stream", json={"message": "hi"}, headers={"X-Forwarded-User": "olga"}
        )
        assert error_of(started, 401)["code"] == "unauthenticated"


# anonymous mode


@pytest.fixture(scope="module")
def anonymous_gateway(pg_dsn: str, redis_url: str, orchestrator: RunningService) -> Iterator[RunningService]:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="anon:",
        GATEWAY_AUTH_MODE="anonymous",
        GATEWAY_COOKIE_SECRET=COOKIE_SECRET,
        GATEWAY_COOKIE_MAX_AGE_SECONDS=str(COOKIE_MAX_AGE),
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        yield gateway


class _SignerAt(TimestampSigner):
    def __init__(self, secret: str, at: int) -> None:
        super().__init__(secret, salt=COOKIE_SALT)
        self.at = at

    def get_timestamp(self) -> int:
        return self.at


@pytest.mark.asyncio
async def test_anonymous_cookie_identity(anonymous_gateway: RunningService) -> None:
    base = anonymous_gateway.url
    async with httpx.AsyncClient(timeout=30) as browser:
        stream = await chat(browser, base, "hello anonymously")
        assert stream.status == 200 and "set-cookie" in stream.headers
        cookie = browser.cookies["stacgis_uid"]
        user_id = cookie.split(".")[0]
        assert user_id.startswith("anon-")
        assert "HttpOnly" in stream.headers["set-cookie"] and "SameSite=lax" in stream.headers["set-cookie"]
        mine = (await browser.get(f"{base}/api/v1/chat/sessions")).json()
        assert [s["id"] for s in mine] == [stream.session_id]

    now = int(time.time())
    forged = {
        "signed with another secret": TimestampSigner("not-the-secret", salt=COOKIE_SALT).sign(user_id).decode(),
        "signature tampered with": cookie[:-2] + ("AA" if not cookie.endswith("AA") else "BB"),
        "expired": _SignerAt(COOKIE_SECRET, now - 2 * COOKIE_MAX_AGE).sign(user_id).decode(),
        "unsigned": user_id,
    }
    async with httpx.AsyncClient(timeout=30) as client:
        for case, value in forged.items():
            response = await client.get(f"{base}/api/v1/chat/sessions", cookies={"stacgis_uid": value})
            # Not the claimed identity: a fresh one, with a fresh cookie.
            assert response.status_code == 200 and response.json() == [], case
            fresh = response.cookies["stacgis_uid"].split(".")[0]
            assert fresh.startswith("anon-") and fresh != user_id, case
            history = await client.get(
                f"{base}/api/v1/chat/session/{stream.session_id}/history", cookies={"stacgis_uid": value}
            )
            assert error_of(history, 404)["message"] == "session not found", case
        # A correctly signed, current cookie is the same user again.
        valid = _SignerAt(COOKIE_SECRET, now - 60).sign(user_id).decode()
        again = await client.get(f"{base}/api/v1/chat/sessions", cookies={"stacgis_uid": valid})
        assert [s["id"] for s in again.json()] == [stream.session_id]
        assert "set-cookie" not in again.headers
        info = (await client.get(f"{base}/api/v1/info")).json()
        assert info["auth_mode"] == "anonymous"
