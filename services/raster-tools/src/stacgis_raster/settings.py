"""raster-tools settings (environment variables prefixed RASTER_)."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import ServiceSettings

# GDAL options for reading COGs: no directory listings, merged range requests,
# a block cache, bounded HTTP waits. Overridable per key via RASTER_GDAL_CONFIG.
DEFAULT_GDAL_CONFIG: dict[str, str] = {
    "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
    # Per read worker process (MB): four workers hold what one shared 256 MB cache did.
    "GDAL_CACHEMAX": "64",
    # Over HTTP GDAL looks only for these names (no probing for sidecar files): COGs, and the metadata
    # files by which the Zarr driver finds a store's arrays (version 2 consolidated or not, and 3).
    "CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".tif,.tiff,.TIF,.TIFF,.zmetadata,.zgroup,.zarray,.zattrs,zarr.json",
    "GDAL_HTTP_MERGE_CONSECUTIVE_RANGES": "YES",
    "GDAL_HTTP_MULTIPLEX": "YES",
    "GDAL_HTTP_VERSION": "2",
    "GDAL_HTTP_TIMEOUT": "20",
    "GDAL_HTTP_MAX_RETRY": "2",
    "GDAL_HTTP_RETRY_DELAY": "0.5",
    "VSI_CACHE": "TRUE",
    "VSI_CACHE_SIZE": "16777216",
    "GDAL_BAND_BLOCK_CACHE": "HASHSET",
}


class RasterSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="RASTER_", extra="ignore", frozen=True)

    port: int = 8011
    # A static catalog (local path or http(s) URL of catalog.json) or a STAC API root URL.
    stac_url: str = ".local/data/stac/catalog.json"
    stac_kind: Literal["auto", "static", "api"] = "auto"
    catalog_refresh_seconds: float = Field(default=300.0, gt=0)
    stac_timeout_seconds: float = Field(default=15.0, gt=0)
    # STAC API: items read per collection when the catalog loads (time steps, counts; 0: none).
    stac_listing_items: int = Field(default=100, ge=0, le=10_000)
    # Asset reads: hosts ("example.com", "*.example.com") and local directories; the
    # location of stac_url itself is always allowed.
    allowed_remote_hosts: list[str] = Field(default_factory=list)
    allowed_local_roots: list[str] = Field(default_factory=list)
    # Worker processes for pixel reads (and threads for catalog work), so the event loop keeps serving.
    io_workers: int = Field(default=4, ge=1, le=64)
    gdal_config: dict[str, str] = Field(default_factory=dict)
    # Statistics read at most about this many pixels, choosing an overview when larger.
    stats_target_pixels: int = Field(default=2_000_000, ge=10_000)
    # Hard cap on pixels in any single read (requests above it are refused).
    max_pixels_per_read: int = Field(default=16_000_000, ge=100_000)
    # Exact zonal statistics switch to an overview above this many cells.
    zonal_max_cells: int = Field(default=4_000_000, ge=10_000)
    max_geometry_vertices: int = Field(default=100_000, ge=4)
    max_point_collections: int = Field(default=20, ge=1)
    max_timeseries_items: int = Field(default=1000, ge=1)
    max_change_items_per_period: int = Field(default=120, ge=1)
    # Scene tools: items searched per request (filters and sorting run over these), and so at most read.
    # Private blob storage (Planetary Computer): hrefs on `sas_hosts` get a token from this endpoint
    # (GET {url}/{collection}), e.g. https://planetarycomputer.microsoft.com/api/sas/v1/token.
    sas_token_url: str | None = None
    sas_hosts: list[str] = Field(default_factory=lambda: ["*.blob.core.windows.net"])
    scene_max_items: int = Field(default=300, ge=1, le=10_000)
    # Scene tiles: items mosaicked per tile at most; a tile over more answers transparent, asking to zoom in.
    scene_tile_max_items: int = Field(default=24, ge=1, le=500)
    # A tool call that takes longer answers with an error; its read worker process is stopped.
    tool_timeout_seconds: float = Field(default=60.0, gt=0)
    # vector-tools, for geometry arguments given as {"dataset": ..., "id": ...}.
    vector_tools_url: str = "http://127.0.0.1:8012"
    vector_tools_timeout_seconds: float = Field(default=10.0, gt=0)
    # Area tools given a city (a point) as place use a circle of this radius around it.
    place_point_buffer_km: float = Field(default=10.0, gt=0, le=500)
    # Tiles: browser cache lifetime, and the public base URL put into TileJSON
    # (unset: the origin the browser used, see tiles.tile_base_url).
    tile_cache_seconds: int = Field(default=3600, ge=0)
    tile_size: int = Field(default=256, ge=64, le=1024)
    # A tile still rendering after this long is answered 504 and its read worker process is stopped.
    tile_timeout_seconds: float = Field(default=20.0, gt=0)
    # Source pixels (per band) one tile may read: the overview level is chosen to stay under it, and a
    # layer's minzoom is raised to the first zoom where every tile can.
    tile_max_pixels: int = Field(default=1_048_576, ge=65_536)
    public_base_url: str | None = None
    # Peers (CIDRs) whose X-Forwarded-Host / X-Forwarded-Proto name that origin: the ingress.
    trusted_proxies: list[str] = Field(default_factory=lambda: ["127.0.0.1/32", "::1/128"])

    @field_validator("stac_url")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("trusted_proxies")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for item in value:
            ipaddress.ip_network(item, strict=False)  # raises ValueError naming the bad entry
        return value

    @field_validator("public_base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        url = (value or "").strip().rstrip("/")
        if url and not url.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return url or None  # empty (as a chart may render it): derived per request

    def gdal_env(self) -> dict[str, str | int]:
        # rasterio wants integers for numeric options such as GDAL_CACHEMAX.
        merged = {**DEFAULT_GDAL_CONFIG, **self.gdal_config}
        return {k: int(v) if v.isdigit() else v for k, v in merged.items()}
