"""What request handlers are given: the orchestrator's parts (built once at start-up) and the verified caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from stacgis_common.auth import Identity, verified_identity

from ..services import Services


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_caller(request: Request, services: ServicesDep) -> Identity:
    """The caller named by the internal token (the gateway's, for its user), or 401."""
    return verified_identity(request, services.settings)


CallerDep = Annotated[Identity, Depends(get_caller)]
