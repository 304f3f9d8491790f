"""`GET /v1/models`: the chat models a run may ask for (`options.model`), as the model server lists them."""

from __future__ import annotations

import logging

import httpx
from fastapi import APIRouter
from pydantic import BaseModel, Field

from .deps import CallerDep, ServicesDep

log = logging.getLogger(__name__)


class ModelList(BaseModel):
    provider: str = Field(description="The provider the orchestrator is configured with (ollama, openai)")
    default: str = Field(description="The model a run gets without options.model")
    models: list[str] = Field(description="Chat models to choose from, the default first")
    listed: bool = Field(description="False when the model server could not be asked: only the default is known")


def _bare(name: str) -> str:
    # Ollama lists a tag given without one as "<name>:latest".
    return name.removesuffix(":latest")


def chat_models(default: str, embedding: str, offered: list[str]) -> list[str]:
    """The default first, then what the server offers, without the embedding model and duplicates."""
    out = [default]
    seen = {_bare(default), _bare(embedding)}
    for name in offered:
        if _bare(name) not in seen:
            seen.add(_bare(name))
            out.append(name)
    return out


router = APIRouter(prefix="/v1")


@router.get("/models", response_model=ModelList)
async def list_models(services: ServicesDep, _: CallerDep) -> ModelList:
    settings = services.settings
    try:
        offered = await services.provider.models()
        listed = True
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as error:
        log.warning("could not list the model server's models", extra={"error": repr(error)})
        offered, listed = [], False
    return ModelList(
        provider=settings.llm_provider,
        default=settings.llm_model,
        models=chat_models(settings.llm_model, settings.embedding_model, offered),
        listed=listed,
    )
