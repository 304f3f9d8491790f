"""A user's sessions: list, history, rename, delete. Another user's session answers 404."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from pydantic import ValidationError

from stacgis_common.arguments import ArgumentError
from stacgis_common.http_errors import Conflict

from ..deps import GatewayDep, UserId
from ..schemas import (
    ActiveRun,
    History,
    HistoryMessage,
    MapState,
    Problem,
    RenameRequest,
    SavedMapState,
    SessionOut,
    SessionSummary,
    ToolCallOut,
    check_map_state,
)
from .errors import not_found

router = APIRouter(prefix="/chat", tags=["sessions"])
# Far beyond any real list, and well inside Postgres' bigint OFFSET.
MAX_OFFSET = 1_000_000
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": Problem, "description": "No such session for this user"}}


@router.get("/sessions", summary="The caller's sessions, most recently used first", response_model=list[SessionSummary])
async def list_sessions(
    gateway: GatewayDep,
    user_id: UserId,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> list[SessionSummary]:
    rows = await gateway.store.list_sessions(user_id, limit, offset)
    return [SessionSummary(**row) for row in rows]


@router.get(
    "/session/{session_id}/history",
    summary="Every message of a session, in order",
    response_model=History,
    response_model_exclude_none=True,
    responses=NOT_FOUND,
)
async def history(session_id: uuid.UUID, gateway: GatewayDep, user_id: UserId) -> History:
    session = await gateway.store.get_session(str(session_id))
    if session is None or session.user_id != user_id:
        raise not_found("session")
    rows = await gateway.store.messages(str(session_id))
    return History(
        session_id=session.id,
        title=session.title,
        messages=[
            HistoryMessage(
                role=row["role"],
                content=row["content"],
                tool_calls=[ToolCallOut(**call) for call in row["tool_calls"]] if row["tool_calls"] else None,
                tool_call_id=row["tool_call_id"],
                name=row["name"],
                grounding=row["grounding"],
                created_at=row["created_at"],
            )
            for row in rows
        ],
    )


@router.patch("/session/{session_id}", summary="Rename a session", response_model=SessionOut, responses=NOT_FOUND)
async def rename(session_id: uuid.UUID, body: RenameRequest, gateway: GatewayDep, user_id: UserId) -> SessionOut:
    title = " ".join(body.title.split())
    limit = gateway.settings.max_title_chars
    if not title:
        raise ArgumentError("title", "title must not be blank")
    if len(title) > limit:
        raise ArgumentError("title", f"title is longer than {limit} characters")
    row = await gateway.store.rename_session(str(session_id), user_id, title)
    if row is None:
        raise not_found("session")
    return SessionOut(id=row.id, title=row.title, created_at=row.created_at, updated_at=row.updated_at)


@router.get(
    "/session/{session_id}/map-state",
    summary="The session's map (view, layers, selection) as last saved",
    response_model=SavedMapState,
    responses=NOT_FOUND,
)
async def get_map_state(session_id: uuid.UUID, gateway: GatewayDep, user_id: UserId) -> SavedMapState:
    found = await gateway.store.map_state(str(session_id), user_id)
    if found is None:
        raise not_found("session")
    state, updated_at = found
    if state is None:
        return SavedMapState(map_state=None, updated_at=None)
    try:
        return SavedMapState(map_state=MapState.model_validate(state), updated_at=updated_at)
    except ValidationError:
        # Saved under older rules: nothing usable to restore (the app saves a fresh one).
        return SavedMapState(map_state=None, updated_at=None)


@router.put(
    "/session/{session_id}/map-state",
    summary="Save the session's map (replaces what was saved)",
    response_model=SavedMapState,
    responses=NOT_FOUND,
)
async def put_map_state(session_id: uuid.UUID, body: MapState, gateway: GatewayDep, user_id: UserId) -> SavedMapState:
    check_map_state(body, gateway.settings)
    state = body.model_dump(mode="json", by_alias=True)
    saved_at = await gateway.store.save_map_state(str(session_id), user_id, state)
    if saved_at is None:
        raise not_found("session")
    return SavedMapState(map_state=body, updated_at=saved_at)


@router.delete(
    "/session/{session_id}",
    summary="Delete a session and its history (Redis and Postgres)",
    status_code=204,
    responses={**NOT_FOUND, 409: {"model": ActiveRun, "description": "A run is still going in this session"}},
)
async def delete(session_id: uuid.UUID, gateway: GatewayDep, user_id: UserId) -> Response:
    if not await gateway.sessions.owned(str(session_id), user_id):
        raise not_found("session")
    active = await gateway.sessions.active_run(str(session_id))
    if active is not None:
        raise Conflict("cancel the session's run before deleting it", run_id=active)
    if not await gateway.store.delete_session(str(session_id), user_id):
        raise not_found("session")
    await gateway.sessions.forget(str(session_id))
    return Response(status_code=204)
