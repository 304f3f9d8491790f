"""The map's place search box and city names: vector-tools' place search and labels, and how far its
loading of the place names has come, read-only, for any signed-in caller.

The gateway checks the query, mints the internal token for the caller (as for a run) and asks
vector-tools' internal `GET /places/search`, `GET /places/labels` or `GET /places/status`; what comes
back is reduced to the public fields. Bounded: query size, result count, one timeout, a per-user rate;
never a 500.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, TypeVar

import httpx
from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ValidationError

from stacgis_common.arguments import ArgumentError, bbox_argument
from stacgis_common.auth import Identity, mint_for
from stacgis_common.http_errors import RateLimited, Refusal, TimedOut, Unavailable, message_of, reason_of

from ..deps import Gateway, GatewayDep, UserId
from ..ratelimit import RateLimiter
from ..schemas import PlaceCandidate, PlaceLabel, PlaceLabels, PlaceResults, PlaceStatus, Problem
from .mcp_proxy import proxy_of

log = logging.getLogger(__name__)
router = APIRouter(prefix="/places", tags=["places"])

MAX_QUERY_CHARS = 100
MAX_RESULTS = 10
# A map view's city names: vector-tools allows 300 (VECTOR_MAX_LABEL_LIMIT); a full-screen view needs fewer.
MAX_LABELS = 250
MAX_BBOX_CHARS = 200
RETRY_AFTER_SECONDS = "2"
Answer = TypeVar("Answer", bound=BaseModel)


class _Found(BaseModel):
    """vector-tools' place search answer, as far as the gateway reads it (other fields are dropped)."""

    results: list[PlaceCandidate]


class _Labelled(BaseModel):
    """vector-tools' city names answer, as far as the gateway reads it."""

    labels: list[PlaceLabel]


def _unavailable(message: str, kind: type[Refusal] = Unavailable) -> Refusal:
    return kind(message, headers={"Retry-After": RETRY_AFTER_SECONDS})


async def _ask_vector_tools(
    request: Request,
    gateway: Gateway,
    user_id: str,
    route: str,
    params: dict[str, Any],
    answer: type[Answer],
    *,
    what: str,
    per_minute: int,
) -> Answer:
    """GET vector-tools' `/places/<route>` as the caller and read its body as `answer` (fields it does not
    name dropped): 429 past `per_minute` (a bucket per route), 422 naming the field vector-tools refused,
    503/504 with Retry-After when it is unset, unreachable, slow or answers what the gateway cannot read."""
    settings = gateway.settings
    base = settings.places_url
    if base is None:
        raise _unavailable(f"no {what} is configured (GATEWAY_VECTOR_TOOLS_URL); retry later")
    limiter = RateLimiter(gateway.redis, gateway.keys, per_minute)
    # "<route> <user>": a space never occurs in a user id, so these buckets are apart from the chat limits.
    decision = await limiter.hit(f"{route} {user_id}")
    if not decision.allowed:
        raise RateLimited(
            f"more than {per_minute} requests a minute to the {what}; retry later",
            headers={"Retry-After": str(decision.retry_after_seconds)},
        )
    proxy = proxy_of(request)  # the process's pooled HTTP client for the tool servers
    try:
        response = await proxy.http.get(
            f"{base}/places/{route}",
            params=params,
            headers={"Authorization": f"Bearer {mint_for(settings, Identity(user_id=user_id))}"},
            timeout=settings.place_search_timeout_seconds,
        )
    except httpx.TimeoutException:
        raise _unavailable(f"the {what} did not answer in time", TimedOut) from None
    except httpx.HTTPError as error:
        log.warning("place index unreachable", extra={"route": route, "error": repr(error)})
        raise _unavailable(f"the {what} is unavailable; retry shortly") from None
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if response.status_code == 422 and params:
        # vector-tools answers the one error body naming the argument at fault ("bbox", "bbox: south
        # (10.0) must not ..."): refused here naming the same parameter, with the same words.
        said = reason_of(body)
        if said is not None and said[0] in params:
            raise ArgumentError(said[0], said[1])
        raise ArgumentError(next(iter(params)), message_of(body) or f"the {what} refused this request")
    # A 422 to a request without parameters names nothing of the caller's: a failure like any other.
    if response.status_code != 200 or not isinstance(body, dict):
        log.warning("place index failed", extra={"route": route, "status": response.status_code})
        raise _unavailable(f"the {what} failed (HTTP {response.status_code}); retry shortly")
    try:
        return answer.model_validate(body)
    except ValidationError:
        log.warning("place index answered what the gateway cannot read", extra={"route": route})
        raise _unavailable(f"the {what} gave an answer the gateway cannot read; retry shortly") from None


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
    text = " ".join(q.split())
    if not text:
        raise ArgumentError("q", "q must not be blank")
    if "\x00" in text:
        raise ArgumentError("q", "q must not contain NUL characters")
    found = await _ask_vector_tools(
        request,
        gateway,
        user_id,
        "search",
        {"q": text, "limit": limit},
        _Found,
        what="place search",
        per_minute=gateway.settings.place_search_per_minute,
    )
    return PlaceResults(query=text, results=found.results[:limit])


@router.get(
    "/labels",
    summary="City names for a map view: the most populous cities whose point lies in the box, largest first",
    response_model=PlaceLabels,
    response_model_exclude_none=True,
    responses={
        429: {"model": Problem, "description": "Too many requests this minute (Retry-After)"},
        503: {"model": Problem, "description": "The city names are unavailable (Retry-After)"},
        504: {"model": Problem, "description": "The city names did not come in time"},
    },
)
async def labels(
    request: Request,
    gateway: GatewayDep,
    user_id: UserId,
    bbox: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_BBOX_CHARS,
            description="west,south,east,north in degrees; west > east crosses the antimeridian",
        ),
    ],
    limit: Annotated[int, Query(ge=1, le=MAX_LABELS, description="Most names returned")] = 100,
) -> PlaceLabels:
    box = bbox_argument(bbox)  # a bad box is an ArgumentError naming bbox: a 422
    found = await _ask_vector_tools(
        request,
        gateway,
        user_id,
        "labels",
        {"bbox": ",".join(str(value) for value in box), "limit": limit},
        _Labelled,
        what="city name lookup",
        per_minute=gateway.settings.place_labels_per_minute,
    )
    return PlaceLabels(bbox=list(box), labels=found.labels[:limit])


@router.get(
    "/status",
    summary="How far the loading of the place names has come: until it ends, search and city names find "
    "only what is loaded",
    response_model=PlaceStatus,
    response_model_exclude_none=True,
    responses={
        429: {"model": Problem, "description": "Too many requests this minute (Retry-After)"},
        503: {"model": Problem, "description": "The place loading status is unavailable (Retry-After)"},
        504: {"model": Problem, "description": "The place loading status did not come in time"},
    },
)
async def place_status(request: Request, gateway: GatewayDep, user_id: UserId) -> PlaceStatus:
    return await _ask_vector_tools(
        request,
        gateway,
        user_id,
        "status",
        {},
        PlaceStatus,
        what="place loading status",
        per_minute=gateway.settings.place_status_per_minute,
    )
