"""What the service is (model, auth mode) and what the caller has used."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import GatewayDep, UserId
from ..schemas import Info, Usage

router = APIRouter(tags=["service"])


@router.get("/info", summary="Model, provider and auth mode of this deployment", response_model=Info)
async def info(gateway: GatewayDep) -> Info:
    settings = gateway.settings
    return Info(model=settings.model_label, provider=settings.provider_label, auth_mode=settings.auth_mode)


@router.get("/usage", summary="The caller's runs, model tokens and tool calls", response_model=Usage)
async def usage(
    gateway: GatewayDep,
    user_id: UserId,
    since: Annotated[datetime | None, Query(description="Only runs finished at or after this time")] = None,
) -> Usage:
    return Usage(**await gateway.store.usage(user_id, since))
