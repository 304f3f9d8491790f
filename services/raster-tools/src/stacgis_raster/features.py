"""Geometries given by reference to a vector-tools feature: {"dataset": ..., "id": ...}."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from stacgis_raster.errors import ArgumentError, NotFoundError, UpstreamError


class FeatureResolver:
    """Fetches full feature geometries from vector-tools' internal endpoint."""

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def geometry(self, reference: dict[str, Any], argument: str, token: str) -> dict[str, Any]:
        dataset, feature_id = reference.get("dataset"), reference.get("id")
        if not isinstance(dataset, str) or not dataset.strip():
            raise ArgumentError(argument, "a feature reference needs a non-empty string 'dataset'")
        if isinstance(feature_id, bool) or not isinstance(feature_id, (str, int)) or str(feature_id) == "":
            raise ArgumentError(argument, "a feature reference needs an 'id' (string or integer)")
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
