"""The map's place search box: vector-tools' place search, read-only, for any signed-in caller.

The gateway checks the query, mints the internal token for the caller (as for a run) and asks
vector-tools' internal `GET /places/search`; what comes back is reduced to the candidates' public
fields. Bounded: query length, result count, one timeout, a per-user rate; never a 500.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from stacgis_common.auth import Identity, mint_for

from ..deps import GatewayDep, UserId
from ..ratelimit import RateLimiter
from ..schemas import PlaceCandidate, PlaceResults, Problem, field_error
from .mcp_proxy import McpProxy
from .problems import ApiProblem

log = logging.getLogger(__name__)
router = APIRouter(prefix="/places", tags=["places"])

MAX_QUERY_CHARS = 100
MAX_RESULTS = 10
RETRY_AFTER_SECONDS = "2"


def _invalid(message: str) -> RequestValidationError:
    return field_error(("query", "q"), message)


def _unavailable(detail: str, status: int = 503) -> ApiProblem:
    return ApiProblem(status, {"detail": detail}, {"Retry-After": RETRY_AFTER_SECONDS})


@router.get(
    "/search",
    summary="Places whose name is, or starts with, the words typed (countries, cities, US states and counties)",
    response_model=PlaceResults,
    response_model_exclude_none=True,
    responses={
        429: {"model": Problem, "description": "Too many searches this minute (Retry-After)"},
        503: {"model": Problem, "description": "The place search is unavailable (Retry-After)"},
        504: {"model": Problem, "description": "The place search did not answer in time"},
    },
)
async def search(
    request: Request,
    gateway: GatewayDep,
    user_id: UserId,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="Words typed")],
    limit: Annotated[int, Query(ge=1, le=MAX_RESULTS, description="Most candidates returned")] = 5,
) -> PlaceResults:
    settings = gateway.settings
    text = " ".join(q.split())
    if not text:
        raise _invalid("q must not be blank")
    if "\x00" in text:
        raise _invalid("q must not contain NUL characters")
    base = settings.places_url
    if base is None:
        raise _unavailable("no place search is configured (GATEWAY_VECTOR_TOOLS_URL); retry later")
    limiter = RateLimiter(gateway.redis, gateway.keys, settings.place_search_per_minute)
    # "places <user>": a space never occurs in a user id, so this bucket is apart from the chat limits.
    decision = await limiter.hit(f"places {user_id}")
    if not decision.allowed:
        raise ApiProblem(
            429,
            {"detail": f"more than {settings.place_search_per_minute} place searches a minute; retry later"},
            {"Retry-After": str(decision.retry_after_seconds)},
        )
    proxy: McpProxy = request.app.state.mcp  # the process's pooled HTTP client for the tool servers
    try:
        response = await proxy.http.get(
            f"{base}/places/search",
            params={"q": text, "limit": limit},
            headers={"Authorization": f"Bearer {mint_for(settings, Identity(user_id=user_id))}"},
            timeout=settings.place_search_timeout_seconds,
        )
    except httpx.TimeoutException:
        raise _unavailable("the place search did not answer in time", 504) from None
    except httpx.HTTPError as error:
        log.warning("place search unreachable", extra={"error": repr(error)})
        raise _unavailable("the place search is unavailable; retry shortly") from None
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if response.status_code == 422:
        detail = body.get("detail") if isinstance(body, dict) else None
        raise _invalid(str(detail or "the place search refused these words"))
    if response.status_code != 200 or not isinstance(body, dict) or not isinstance(body.get("results"), list):
        log.warning("place search failed", extra={"status": response.status_code})
        raise _unavailable(f"the place search failed (HTTP {response.status_code}); retry shortly")
    try:
        results = [PlaceCandidate.model_validate(item) for item in body["results"][:limit]]
    except ValidationError:
        log.warning("place search answered candidates without name, kind or ref")
        raise _unavailable("the place search gave an answer the gateway cannot read; retry shortly") from None
    return PlaceResults(query=text, results=results)
