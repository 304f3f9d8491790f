"""GET /models: the chat models the orchestrator's provider offers, for the model picker."""

from __future__ import annotations

from fastapi import APIRouter

from stacgis_common.http_errors import Unavailable

from ..deps import GatewayDep, UserId
from ..models import ModelsUnavailable
from ..schemas import ModelList, Problem

router = APIRouter(tags=["meta"])
RETRY_AFTER_SECONDS = "5"


@router.get(
    "/models",
    summary="Chat models a message may ask for (`model` of POST /chat/stream), the default first",
    response_model=ModelList,
    responses={503: {"model": Problem, "description": "The orchestrator cannot say (Retry-After)"}},
)
async def list_models(gateway: GatewayDep, user_id: UserId) -> ModelList:
    try:
        choices = await gateway.models.choices(user_id)
    except ModelsUnavailable as error:
        raise Unavailable(
            f"the model list is unavailable: {error}", headers={"Retry-After": RETRY_AFTER_SECONDS}
        ) from None
    return ModelList(default=choices.default, models=choices.models)
