"""The internal service token: a short-lived HS256 JWT naming the user and session.

The gateway mints it after authenticating the browser; every downstream service
verifies it and takes the caller's identity from it alone, never from arguments.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request

from .http_errors import Unauthenticated
from .settings import ServiceSettings

ISSUER = "stacgis-gateway"
ALGORITHM = "HS256"
LEEWAY_SECONDS = 5
# Internal tokens are minted per request; a longer-lived one is a leaked or forged token, refused.
MAX_TOKEN_LIFETIME_SECONDS = 3600


@dataclass(frozen=True)
class Identity:
    user_id: str
    session_id: str | None = None


class InvalidInternalToken(Exception):
    """The token is missing, expired, tampered with or meant for another audience."""


def mint_internal_token(
    secret: str,
    user_id: str,
    session_id: str | None = None,
    ttl_seconds: int = 900,
    audience: str = "stacgis-internal",
) -> str:
    if not user_id:
        raise ValueError("user_id must not be empty")
    now = int(time.time())
    claims: dict[str, object] = {
        "iss": ISSUER,
        "aud": audience,
        "sub": user_id,
        "iat": now,
        "exp": now + ttl_seconds,
        "jti": uuid.uuid4().hex,
    }
    if session_id:
        claims["sid"] = session_id
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def verify_internal_token(token: str, secret: str, audience: str = "stacgis-internal") -> Identity:
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            audience=audience,
            issuer=ISSUER,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "sub", "aud", "iss"]},
        )
    except jwt.PyJWTError as error:
        raise InvalidInternalToken(str(error)) from None
    issued, expires = claims.get("iat"), claims.get("exp")
    if not isinstance(issued, int | float) or not isinstance(expires, int | float):
        raise InvalidInternalToken("token has no numeric iat/exp")
    if expires - issued > MAX_TOKEN_LIFETIME_SECONDS:
        raise InvalidInternalToken(f"token lifetime exceeds {MAX_TOKEN_LIFETIME_SECONDS} s")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise InvalidInternalToken("token has no subject")
    session = claims.get("sid")
    return Identity(user_id=subject, session_id=session if isinstance(session, str) else None)


def mint_for(settings: ServiceSettings, identity: Identity) -> str:
    """A fresh token for calls this service makes on behalf of a verified caller."""
    return mint_internal_token(
        settings.internal_token_secret.get_secret_value(),
        identity.user_id,
        identity.session_id,
        settings.internal_token_ttl_seconds,
        settings.internal_token_audience,
    )


class InternalTokenVerifier:
    """MCP SDK token verifier: a request without a valid internal token gets 401."""

    def __init__(self, settings: ServiceSettings) -> None:
        self._secret = settings.internal_token_secret.get_secret_value()
        self._audience = settings.internal_token_audience

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            identity = verify_internal_token(token, self._secret, self._audience)
        except InvalidInternalToken:
            return None
        claims = jwt.decode(token, options={"verify_signature": False})
        return AccessToken(
            token=token,
            client_id=ISSUER,
            scopes=[],
            expires_at=int(claims["exp"]),
            subject=identity.user_id,
            claims={"sid": identity.session_id},
        )


def current_identity() -> Identity:
    """The verified caller of the MCP tool being run."""
    access = get_access_token()
    if access is None or not access.subject:
        raise ToolError("no verified internal token: this tool needs an authenticated caller")
    session = (access.claims or {}).get("sid")
    return Identity(user_id=access.subject, session_id=session if isinstance(session, str) else None)


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise InvalidInternalToken("missing bearer token")
    return token.strip()


def _request_identity(request: Request, settings: ServiceSettings) -> tuple[Identity, str]:
    token = bearer_token(request)
    secret = settings.internal_token_secret.get_secret_value()
    return verify_internal_token(token, secret, settings.internal_token_audience), token


def verified_identity(request: Request, settings: ServiceSettings) -> Identity:
    """The caller the request's internal token names, or a 401 (`http_errors.Unauthenticated`): FastAPI
    handlers and plain Starlette routes answer it from their error table, in the one error body."""
    try:
        identity, token = _request_identity(request, settings)
    except InvalidInternalToken as error:
        raise Unauthenticated(f"invalid internal token: {error}", headers={"WWW-Authenticate": "Bearer"}) from None
    request.state.identity = identity
    request.state.internal_token = token
    return identity


def identity_dependency(settings: ServiceSettings) -> Callable[[Request], Awaitable[Identity]]:
    """FastAPI dependency: the verified caller, or 401."""

    async def dependency(request: Request) -> Identity:
        return verified_identity(request, settings)

    return dependency
