"""Geometries given by reference to a vector-tools feature ({"dataset": ..., "id": ...}) or by place name,
both resolved by vector-tools' internal endpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from stacgis_common.arguments import ArgumentError, NotFoundError
from stacgis_common.http_errors import reason_of
from stacgis_raster.errors import UpstreamError


@dataclass(frozen=True)
class ResolvedPlace:
    place: dict[str, Any]  # name, kind, dataset, id, ref, country, point or bbox (vector-tools' answer)
    geometry: dict[str, Any]  # full GeoJSON geometry, WGS 84


class FeatureResolver:
    """Fetches full feature geometries from vector-tools' internal endpoint."""

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def geometry(self, dataset: str, feature_id: str | int, argument: str, token: str) -> dict[str, Any]:
        """The geometry of a feature reference (checked at the edge: `tool_args.feature_reference`)."""
        # Quote both parts so a reference can never change the request path.
        url = f"{self.base_url}/features/{quote(dataset, safe='')}/{quote(str(feature_id), safe='')}"
        try:
            response = await self._client.get(url, headers={"Authorization": f"Bearer {token}"})
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"could not resolve {argument} reference {dataset}/{feature_id}: vector-tools at "
                f"{self.base_url} did not answer ({type(exc).__name__})"
            ) from exc
        if response.status_code == 404:
            raise NotFoundError(argument, f"vector dataset '{dataset}' has no feature '{feature_id}'")
        if response.status_code != 200:
            raise UpstreamError(f"vector-tools answered {response.status_code} for {dataset}/{feature_id}")
        try:
            body = response.json()
        except ValueError as exc:
            raise UpstreamError("vector-tools returned a body that is not JSON") from exc
        geometry = body.get("geometry") if isinstance(body, dict) and body.get("type") == "Feature" else body
        if not isinstance(geometry, dict):
            raise UpstreamError(f"vector-tools returned no geometry for {dataset}/{feature_id}")
        return geometry

    async def place(self, name: str, argument: str, token: str, dataset: str | None = None) -> ResolvedPlace:
        """The feature a place name (or "<dataset>/<id>") means, with its full geometry; `dataset`
        limits the search to one dataset (e.g. cities). The name is checked at the edge
        (`tool_args.place_name`)."""
        try:
            response = await self._client.get(
                f"{self.base_url}/places/resolve",
                params={"place": name.strip(), **({"dataset": dataset} if dataset else {})},
                headers={"Authorization": f"Bearer {token}"},
            )
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"could not resolve {argument} {name!r}: vector-tools at {self.base_url} did not answer "
                f"({type(exc).__name__})"
            ) from exc
        try:
            body = response.json()
        except ValueError as exc:
            raise UpstreamError(f"vector-tools answered {response.status_code} with a body that is not JSON") from exc
        # The one error body (stacgis_common.http_errors): its words, under this tool's argument name.
        said = reason_of(body)
        reason = said[1] if said else None
        if response.status_code == 404:
            raise NotFoundError(argument, reason or f"unknown place {name!r}")
        if response.status_code in (409, 422):
            raise ArgumentError(argument, reason or f"cannot resolve {name!r}")
        if response.status_code != 200 or not isinstance(body, dict):
            raise UpstreamError(f"vector-tools answered {response.status_code} resolving {name!r}")
        place, feature = body.get("place"), body.get("feature")
        geometry = feature.get("geometry") if isinstance(feature, dict) else None
        if not isinstance(place, dict) or not isinstance(geometry, dict):
            raise UpstreamError(f"vector-tools returned no place or geometry for {name!r}")
        return ResolvedPlace(place, geometry)
