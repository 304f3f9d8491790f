"""Descriptions of the demo collections, independent of how STAC serialises them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from affine import Affine
from rasterio.crs import CRS

from stacgis_common.packages import Package, SourceFile


@dataclass(frozen=True)
class BandSpec:
    name: str
    description: str
    unit: str | None
    common_name: str | None = None


@dataclass(frozen=True)
class ClassSpec:
    value: int
    title: str
    color: tuple[int, int, int, int]

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "_" for c in self.title.lower()).strip("_")


@dataclass(frozen=True)
class RasterArray:
    """An array ready to become a COG."""

    data: np.ndarray
    transform: Affine
    crs: CRS | str
    nodata: float | None


@dataclass
class ItemSpec:
    id: str
    cog: Path
    load: Callable[[], RasterArray]
    datetime: dt.datetime | None = None
    start: dt.datetime | None = None
    end: dt.datetime | None = None


@dataclass
class CollectionSpec:
    id: str
    title: str
    description: str
    keywords: list[str]
    license: str
    providers: list[dict[str, Any]]
    sources: list[SourceFile]
    bands: list[BandSpec]
    items: list[ItemSpec]
    # False when the source documents no acquisition date: items then carry the
    # date of the source file and datetime filters do not apply to the collection.
    time_resolved: bool
    overview_resampling: str = "average"
    classes: list[ClassSpec] | None = None
    colormap_name: str | None = None
    render_bands: list[int] | None = None
    rescale: list[tuple[float, float]] | None = None
    derived_from: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def categorical(self) -> bool:
        return self.classes is not None


# -- the table of demo datasets (datasets.py) and what its rows are made of ------------------


@dataclass(frozen=True)
class Provider:
    name: str
    roles: tuple[str, ...]
    url: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "roles": list(self.roles)}
        if self.url:
            out["url"] = self.url
        return out


# Stands in a row's providers for the package that ships the source file (its registry, name, version).
PACKAGE_HOST = Provider("package host", ("host",))


@dataclass(frozen=True)
class OneItem:
    """The collection is one item read from the source file by `load`."""

    load: Callable[[Path], RasterArray]
    item_id: str | None = None  # default: the collection's id
    # The period the data covers; None: undated, the item carries the file's timestamp.
    period: tuple[dt.datetime, dt.datetime] | None = None


@dataclass(frozen=True)
class NetcdfMonths:
    """One item per monthly band of `variable` in the source NetCDF file."""

    variable: str


@dataclass(frozen=True)
class DatasetSpec:
    """One row of the table: a demo collection, the packaged file it comes from and how it is read."""

    id: str
    title: str
    description: str
    keywords: tuple[str, ...]
    license: str
    package: Package
    path: str  # of the source file inside the package
    providers: tuple[Provider, ...]
    bands: tuple[BandSpec, ...]
    items: OneItem | NetcdfMonths
    # A GDAL .aux.xml in the same package whose raster attribute table names the classes (a source too).
    class_table: str | None = None
    classes: tuple[ClassSpec, ...] | None = None
    overview_resampling: str = "average"
    colormap_name: str | None = None
    render_bands: tuple[int, ...] | None = None
    rescale: tuple[tuple[float, float], ...] | None = None
    derived_from: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def time_resolved(self) -> bool:
        """Dated items (a stated period, or monthly bands); undated ones carry the file's timestamp."""
        return isinstance(self.items, NetcdfMonths) or self.items.period is not None
