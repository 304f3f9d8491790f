"""The chat models a user may pick: the orchestrator's list (GET /v1/models), kept for a short while."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from stacgis_common.auth import Identity, mint_for

from .config import GatewaySettings
from .orchestrator import OrchestratorClient, OrchestratorError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelChoices:
    default: str
    models: list[str]


class ModelsUnavailable(Exception):
    """The orchestrator could not say which models it offers."""


class ModelCatalog:
    def __init__(self, settings: GatewaySettings, orchestrator: OrchestratorClient) -> None:
        self._settings = settings
        self._orchestrator = orchestrator
        self._cached: tuple[float, ModelChoices] | None = None
        self._lock = asyncio.Lock()

    async def choices(self, user_id: str) -> ModelChoices:
        """The orchestrator's models, the default first; asked again after `models_cache_seconds`."""
        async with self._lock:  # one question to the orchestrator for a burst of page loads
            now = time.monotonic()
            if self._cached is not None and now - self._cached[0] < self._settings.models_cache_seconds:
                return self._cached[1]
            token = mint_for(self._settings, Identity(user_id=user_id))
            try:
                answer = await self._orchestrator.models(token)
            except OrchestratorError as error:
                raise ModelsUnavailable(str(error)) from None
            body = answer.body if isinstance(answer.body, dict) else {}
            default, models = body.get("default"), body.get("models")
            if (
                answer.status != 200
                or not isinstance(default, str)
                or not isinstance(models, list)
                or not all(isinstance(name, str) for name in models)
            ):
                log.warning("the orchestrator's model list is unreadable", extra={"status": answer.status})
                raise ModelsUnavailable(f"the orchestrator answered HTTP {answer.status} without a model list")
            listed = [default, *(name for name in models if name != default)]
            choices = ModelChoices(default=default, models=listed)
            self._cached = (now, choices)
            return choices
