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

from stacgis_common.packages import SourceFile


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
