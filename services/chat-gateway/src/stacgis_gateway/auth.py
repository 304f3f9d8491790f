"""Who the browser is, by `GATEWAY_AUTH_MODE`:

- `anonymous`: a random user id in a signed, timestamped cookie (local use); a missing, forged or
  expired cookie gets a fresh id, never the one it claims;
- `trusted-header`: the user named by a header set by an authenticating proxy (oauth2-proxy), believed
  only when the peer address is one of the configured proxies (none by default); the proxy must set or
  clear every configured header, and headers that disagree (or one sent twice) are refused, so a value
  the client added itself can never be the one believed;
- `jwt`: a bearer token verified against a JWKS URL or a public key, with issuer and audience.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import secrets
import time
from typing import Protocol

import jwt
from itsdangerous import BadSignature, TimestampSigner
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .clientaddr import parse_address, trusted
from .config import GatewaySettings

ANONYMOUS_ID = re.compile(r"^anon-[0-9a-f]{32}$")
# Printable ASCII without spaces: ids travel in tokens, logs and Redis keys.
USER_ID = re.compile(r"^[\x21-\x7e]{1,256}$")
SET_COOKIE_STATE = "gateway_set_cookie"
# Set on request.state when the request carried no identity and got a fresh anonymous one.
NEW_IDENTITY_STATE = "gateway_new_identity"


class AuthError(Exception):
    """The request's credentials are missing or not acceptable; the message says why."""


class Authenticator(Protocol):
    mode: str

    async def authenticate(self, request: Request) -> str: ...


class AnonymousAuth:
    mode = "anonymous"

    def __init__(self, settings: GatewaySettings) -> None:
        self._signer = TimestampSigner(settings.cookie_secret.get_secret_value(), salt="stacgis-anonymous-user")
        self._name = settings.cookie_name
        self._max_age = settings.cookie_max_age_seconds
        self._secure = settings.cookie_secure

    async def authenticate(self, request: Request) -> str:
        cookie = request.cookies.get(self._name)
        if cookie:
            try:
                value, signed_at = self._signer.unsign(cookie, max_age=self._max_age, return_timestamp=True)
            except BadSignature:  # forged, tampered with or expired (SignatureExpired is a BadSignature)
                value = b""
            user_id = value.decode("ascii", "replace")
            if ANONYMOUS_ID.match(user_id):
                # Re-sign once the cookie is half-way to expiry, so active users keep their id.
                if (signed_at.timestamp() + self._max_age / 2) < time.time():
                    self._issue(request, user_id)
                return user_id
        user_id = f"anon-{secrets.token_hex(16)}"
        self._issue(request, user_id)
        # Dropping the cookie must not buy a fresh rate-limit budget: the caller limits these by address.
        setattr(request.state, NEW_IDENTITY_STATE, True)
        return user_id

    def issue_cookie(self, user_id: str) -> str:
        """The Set-Cookie header value for `user_id` (also used by tests and tools)."""
        carrier = Response()
        carrier.set_cookie(
            self._name,
            self._signer.sign(user_id.encode()).decode(),
            max_age=self._max_age,
            httponly=True,
            samesite="lax",
            secure=self._secure,
            path="/",
        )
        return carrier.headers["set-cookie"]

    def _issue(self, request: Request, user_id: str) -> None:
        setattr(request.state, SET_COOKIE_STATE, self.issue_cookie(user_id))


class TrustedHeaderAuth:
    mode = "trusted-header"

    def __init__(self, settings: GatewaySettings) -> None:
        self._networks = [ipaddress.ip_network(cidr, strict=False) for cidr in settings.trusted_proxies]
        self._headers = settings.trusted_user_header

    def _trusted_peer(self, request: Request) -> bool:
        peer = parse_address(request.client.host) if request.client else None
        return trusted(peer, self._networks)

    async def authenticate(self, request: Request) -> str:
        if not self._trusted_peer(request):
            raise AuthError("request did not come through a trusted proxy")
        # Every configured header is read, not the first present: a proxy that sets only one of them
        # would otherwise let a client's own value in an earlier-listed header win.
        found: dict[str, str] = {}
        for header in self._headers:
            values = [value.strip() for value in request.headers.getlist(header)]
            if len(values) > 1:
                raise AuthError(f"header {header} was sent more than once")
            if values and values[0]:
                if not USER_ID.match(values[0]):
                    raise AuthError(f"header {header} does not hold a valid user id")
                found[header] = values[0]
        if len(set(found.values())) > 1:
            raise AuthError(f"user headers disagree ({', '.join(found)})")
        if not found:
            raise AuthError(f"missing user header ({', '.join(self._headers)})")
        return next(iter(found.values()))


class JwtAuth:
    mode = "jwt"

    def __init__(self, settings: GatewaySettings) -> None:
        self._jwks = (
            jwt.PyJWKClient(settings.jwks_url, cache_keys=True, lifespan=settings.jwks_cache_seconds, timeout=5)
            if settings.jwks_url
            else None
        )
        self._public_key = settings.jwt_public_key
        self._algorithms = settings.jwt_algorithms
        self._issuer = settings.jwt_issuer
        self._audience = settings.jwt_audience
        self._claim = settings.jwt_user_claim

    async def _key(self, token: str) -> object:
        if self._jwks is None:
            return self._public_key
        try:
            # PyJWKClient fetches with urllib: keep the event loop free.
            return (await asyncio.to_thread(self._jwks.get_signing_key_from_jwt, token)).key
        except jwt.PyJWKClientError as error:
            raise AuthError(f"no signing key for this token: {error}") from None
        except jwt.PyJWTError as error:
            raise AuthError(f"invalid token: {error}") from None

    async def authenticate(self, request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthError("missing bearer token")
        key = await self._key(token)
        try:
            claims = jwt.decode(
                token,
                key,  # type: ignore[arg-type]
                algorithms=self._algorithms,
                audience=self._audience,
                issuer=self._issuer,
                leeway=30,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as error:
            raise AuthError(f"invalid token: {error}") from None
        user_id = claims.get(self._claim)
        if not isinstance(user_id, str) or not USER_ID.match(user_id):
            raise AuthError(f"token claim {self._claim!r} does not hold a valid user id")
        return user_id


def build_authenticator(settings: GatewaySettings) -> Authenticator:
    if settings.auth_mode == "trusted-header":
        return TrustedHeaderAuth(settings)
    if settings.auth_mode == "jwt":
        return JwtAuth(settings)
    return AnonymousAuth(settings)


class CookieMiddleware:
    """Adds the anonymous-identity cookie chosen while handling the request, streaming responses included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = scope.get("state", {}).get(SET_COOKIE_STATE)
                if cookie:
                    message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode("latin-1"))]
            await send(message)

        await self.app(scope, receive, send_with_cookie)
