"""The catalog's records: collections, their bands and items, as the tools read them (parsed from
STAC in `stac_records`, shaped as JSON in `results`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from stacgis_raster.stac_fields import iso
from stacgis_raster.validation import BBox


@dataclass(frozen=True)
class CubeFormat:
    """How GDAL opens a multidimensional file: the time steps of a (time, y, x) variable are the
    bands of the variable's dataset, in the order of the time dimension."""

    name: str
    variable: str  # the open string of one variable: {href} the file, {variable} the variable
    container: str  # the open string of the whole file, whose subdatasets are its variables
    # Prefix for http(s) hrefs where the driver does not add GDAL's /vsicurl/ itself.
    remote_prefix: str = ""

    def _href(self, href: str) -> str:
        return self.remote_prefix + href if self.remote_prefix and href.startswith(("http://", "https://")) else href

    def source(self, href: str, variable: str) -> str:
        return self.variable.format(href=self._href(href), variable=variable)

    def root(self, href: str) -> str:
        return self.container.format(href=self._href(href))


_NETCDF = CubeFormat("NetCDF", "netcdf:{href}:{variable}", "netcdf:{href}")
# A Zarr store is a directory (or a URL prefix): the path is quoted, the array is a path inside it.
_ZARR = CubeFormat("Zarr", 'ZARR:"{href}":/{variable}', 'ZARR:"{href}"', remote_prefix="/vsicurl/")
# Media types of data cube assets and how each is opened: the one table of them.
CUBE_FORMATS: dict[str, CubeFormat] = {
    "application/x-netcdf": _NETCDF,
    "application/netcdf": _NETCDF,
    "application/vnd+zarr": _ZARR,
    "application/vnd.zarr": _ZARR,
    "application/x-zarr": _ZARR,
}


def cube_format(media_type: str | None) -> CubeFormat | None:
    """The format of a cube asset's media type; parameters such as `; version=2` do not matter."""
    return CUBE_FORMATS.get((media_type or "").split(";")[0].strip().lower())


@dataclass(frozen=True)
class BandInfo:
    index: int
    name: str
    description: str | None
    unit: str | None
    nodata: float | None
    data_type: str | None
    classes: dict[int, str] | None = None
    common_name: str | None = None
    # raster:bands scale and offset: physical value = stored value * scale + offset.
    scale: float | None = None
    offset: float | None = None


@dataclass(frozen=True)
class ItemRecord:
    id: str
    collection_id: str
    bbox: BBox | None
    start: dt.datetime | None
    end: dt.datetime | None
    href: str
    # Scene items: one single-band asset per band (key -> href), and their cloud cover when stated.
    assets: dict[str, str] = field(default_factory=dict)
    cloud_cover: float | None = None
    # Data cubes: the assets are variables of one multidimensional file in this format, and this
    # record is the time step in band `band` of each.
    cube: CubeFormat | None = None
    band: int = 1
    # The item's own cloud mask (the collection's `cloud_mask` asset), when it has one.
    mask_href: str | None = None

    @property
    def when(self) -> dt.datetime | None:
        return self.start

    def time_label(self) -> str | None:
        if self.start is None:
            return None
        if self.end is None or self.end == self.start:
            return iso(self.start)
        return f"{iso(self.start)}/{iso(self.end)}"


@dataclass
class CollectionRecord:
    id: str
    title: str
    description: str
    keywords: list[str]
    license: str
    providers: list[str]
    bbox: BBox | None
    start: dt.datetime | None
    end: dt.datetime | None
    time_resolved: bool
    bands: list[BandInfo]
    render: dict[str, Any]
    proj_code: str | None
    resolution_m: float | None
    item_count: int | None
    provenance: dict[str, Any] | None = None
    items: list[ItemRecord] = field(default_factory=list)
    # Scene collections (STAC `item_assets` with one band per asset): asset key -> its band.
    asset_bands: dict[str, BandInfo] = field(default_factory=dict)
    # Data cubes: the STAC datacube extension's dimensions (x, y, time), for get_raster_info.
    cube_dimensions: dict[str, Any] | None = None
    # Scenes: the asset holding each item's cloud mask and its class values that mean cloud or shadow.
    cloud_mask: tuple[str, tuple[int, ...]] | None = None

    @property
    def categorical(self) -> bool:
        return bool(self.bands and self.bands[0].classes)

    @property
    def scenes(self) -> bool:
        """Many items per area, each with one asset per band: read by the scene tools."""
        return bool(self.asset_bands)

    def temporal_label(self) -> str | None:
        if self.start is None and self.end is None:
            return None
        return f"{iso(self.start) if self.start else '..'}/{iso(self.end) if self.end else '..'}"
