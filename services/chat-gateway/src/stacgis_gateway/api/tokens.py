"""Personal access tokens: a signed-in user creates, lists and revokes the tokens their outside MCP
clients use at `/mcp/<server>`. The token itself is in the creation answer only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from pydantic import BaseModel, Field, StrictInt

from stacgis_common.http_errors import Conflict, invalid_fields

from ..deps import GatewayDep, UserId
from ..schemas import STRICT, CleanText, Problem
from ..tokens import TokenInfo, TokenLimitReached, TokenStore
from .errors import not_found
from .mcp_proxy import proxy_of

router = APIRouter(prefix="/tokens", tags=["access tokens"])

TokenId = Annotated[str, Path(pattern=r"^[0-9a-fA-F-]{32,36}$", description="Id of the token (not the token)")]


class TokenCreate(BaseModel):
    model_config = STRICT

    name: CleanText = Field(min_length=1, max_length=100, description="What the token is for, e.g. 'my IDE'")
    servers: list[str] = Field(
        min_length=1, max_length=16, description="MCP servers the token may reach (`/mcp/<server>`)"
    )
    expires_in_days: StrictInt = Field(default=30, ge=1, description="Days until the token stops working")


class TokenOut(BaseModel):
    id: str
    name: str
    servers: list[str]
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime | None
    expired: bool


class TokenCreated(TokenOut):
    token: str = Field(description="The token: shown this once, only its hash is kept")


def token_store(request: Request) -> TokenStore:
    return proxy_of(request).tokens


def _out(info: TokenInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "name": info.name,
        "servers": info.servers,
        "created_at": info.created_at,
        "expires_at": info.expires_at,
        "last_used_at": info.last_used_at,
        "expired": info.expires_at <= datetime.now(UTC),
    }


@router.post(
    "",
    summary="Create a personal access token for outside MCP clients (shown once)",
    status_code=201,
    response_model=TokenCreated,
    responses={409: {"model": Problem, "description": "Too many active tokens"}},
)
async def create_token(body: TokenCreate, request: Request, gateway: GatewayDep, user_id: UserId) -> TokenCreated:
    settings = gateway.settings
    errors: list[dict[str, Any]] = []
    if not body.name.strip():
        errors.append({"loc": ("body", "name"), "msg": "name must not be blank"})
    known = sorted(settings.mcp_servers)
    for index, server in enumerate(body.servers):
        if server not in settings.mcp_servers:
            errors.append({"loc": ("body", "servers", index), "msg": f"unknown MCP server; one of: {', '.join(known)}"})
    if body.expires_in_days > settings.mcp_token_max_days:
        errors.append({"loc": ("body", "expires_in_days"), "msg": f"at most {settings.mcp_token_max_days} days"})
    if errors:
        raise invalid_fields(errors)
    servers = sorted(set(body.servers))
    try:
        token, info = await token_store(request).create(
            user_id, body.name.strip(), servers, timedelta(days=body.expires_in_days), settings.mcp_tokens_per_user
        )
    except TokenLimitReached as error:
        raise Conflict(str(error)) from None
    return TokenCreated(**_out(info), token=token)


@router.get("", summary="The caller's access tokens that are not revoked", response_model=list[TokenOut])
async def list_tokens(request: Request, user_id: UserId) -> list[TokenOut]:
    return [TokenOut(**_out(info)) for info in await token_store(request).list(user_id)]


@router.delete(
    "/{token_id}",
    summary="Revoke an access token (it stops working at once)",
    status_code=204,
    response_class=Response,
    responses={404: {"model": Problem, "description": "No such token for this user"}},
)
async def revoke_token(token_id: TokenId, request: Request, user_id: UserId) -> Response:
    if not await token_store(request).revoke(user_id, token_id):
        raise not_found("token")
    return Response(status_code=204)
