"""Writes a tiled collection as real STAC APIs lay them out: many items, one COG per band per item.

Real STAC APIs (Earth Search, Planetary Computer) hold many overlapping scenes per area and date,
each with one Cloud-Optimized GeoTIFF per band; `SceneWriter` writes that shape, and
`grid_tiles` cuts a raster into tiles that overlap by a few pixels like neighbouring scenes do.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pystac
import shapely
from affine import Affine
from pyproj import Transformer
from shapely.geometry import box, mapping

from stacgis_raster.demo_data.cog import is_complete_cog, write_cog
from stacgis_raster.demo_data.model import BandSpec, CollectionSpec, RasterArray
from stacgis_raster.stac_fields import EO_EXT, PROVENANCE_FIELD, TIME_RESOLVED_FIELD, iso

PROJ_EXT = "https://stac-extensions.github.io/projection/v2.0.0/schema.json"
RASTER_EXT = "https://stac-extensions.github.io/raster/v1.1.0/schema.json"
# Band 1 digital numbers at or above this are bright, cloud-like pixels (about 1 % of the scene).
BRIGHT_BLUE_DN = 120


@dataclass(frozen=True)
class Tile:
    row: int
    col: int
    rows: slice
    cols: slice


def grid_tiles(height: int, width: int, nrows: int, ncols: int, overlap: int) -> list[Tile]:
    """`nrows` x `ncols` tiles covering the array, each reaching `overlap` pixels into its neighbours."""
    tiles = []
    for r in range(nrows):
        for c in range(ncols):
            r0, r1 = max(0, r * height // nrows - overlap), min(height, (r + 1) * height // nrows + overlap)
            c0, c1 = max(0, c * width // ncols - overlap), min(width, (c + 1) * width // ncols + overlap)
            tiles.append(Tile(r, c, slice(r0, r1), slice(c0, c1)))
    return tiles


def _footprint(transform: Affine, height: int, width: int, crs: Any) -> shapely.Geometry:
    outline = box(*(transform * (0, height)), *(transform * (width, 0)))
    if str(crs) in {"EPSG:4326", "OGC:CRS84"}:
        return outline
    to_wgs84 = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    dense = shapely.segmentize(outline, max(outline.bounds[2] - outline.bounds[0], 1) / 20)
    return shapely.transform(dense, lambda xy: np.column_stack(to_wgs84.transform(xy[:, 0], xy[:, 1])))


def _band_fields(band: BandSpec, data: np.ndarray, nodata: float | None, resolution_m: float) -> dict[str, Any]:
    raster: dict[str, Any] = {"data_type": data.dtype.name, "spatial_resolution": resolution_m}
    if nodata is not None:
        raster["nodata"] = nodata
    if band.unit:
        raster["unit"] = band.unit
    eo: dict[str, Any] = {"name": band.name, "description": band.description}
    if band.common_name:
        eo["common_name"] = band.common_name
    return {"eo:bands": [eo], "raster:bands": [raster]}


def _asset_key(band: BandSpec) -> str:
    return band.common_name or band.name


class SceneWriter:
    """Writes one tiled collection: a COG per band per item, and the pystac objects describing them."""

    def __init__(self, stac_dir: Path, spec: CollectionSpec, resolution_m: float) -> None:
        self.stac_dir = stac_dir
        self.spec = spec
        self.resolution_m = resolution_m
        self.items: list[pystac.Item] = []
        self.cogs: list[Path] = []

    def add(
        self,
        item_id: str,
        raster: RasterArray,
        when: dt.datetime,
        *,
        start: dt.datetime | None = None,
        end: dt.datetime | None = None,
        properties: dict[str, Any] | None = None,
        cloud_mask: np.ndarray | None = None,
    ) -> None:
        _, height, width = raster.data.shape
        footprint = _footprint(raster.transform, height, width, raster.crs)
        props: dict[str, Any] = {
            **(properties or {}),
            "proj:code": str(raster.crs),
            "proj:shape": [height, width],
            "proj:transform": list(raster.transform)[:6],
        }
        if start is not None and end is not None:
            props["start_datetime"], props["end_datetime"] = iso(start), iso(end)
        item = pystac.Item(
            id=item_id,
            geometry=mapping(shapely.set_precision(footprint, 1e-6)),
            bbox=[round(v, 6) for v in footprint.bounds],
            datetime=when,
            properties=props,
            collection=self.spec.id,
            stac_extensions=[PROJ_EXT, RASTER_EXT, EO_EXT],
        )
        for index, band in enumerate(self.spec.bands):
            key = _asset_key(band)
            cog = self.stac_dir / self.spec.id / item_id / f"{item_id}-{key}.tif"
            self.cogs.append(cog)
            if not is_complete_cog(cog):
                write_cog(
                    raster.data[index : index + 1],
                    cog,
                    transform=raster.transform,
                    crs=raster.crs,
                    nodata=raster.nodata,
                    band_descriptions=[band.name],
                    overview_resampling=self.spec.overview_resampling,
                    blocksize=256,
                )
            item.add_asset(
                key,
                pystac.Asset(
                    href=str(cog),
                    media_type=pystac.MediaType.COG,
                    roles=["data"],
                    title=band.description,
                    extra_fields=_band_fields(band, raster.data, raster.nodata, self.resolution_m),
                ),
            )
        if cloud_mask is not None:
            self._add_cloud_mask(item, raster, cloud_mask)
        self.items.append(item)

    def _add_cloud_mask(self, item: pystac.Item, raster: RasterArray, mask: np.ndarray) -> None:
        """A cloud mask asset (STAC role `cloud`) with classes, as imagery catalogs ship them."""
        cog = self.stac_dir / self.spec.id / item.id / f"{item.id}-cloud_mask.tif"
        self.cogs.append(cog)
        if not is_complete_cog(cog):
            write_cog(
                mask.astype("uint8")[np.newaxis],
                cog,
                transform=raster.transform,
                crs=raster.crs,
                nodata=None,
                band_descriptions=["cloud_mask"],
                overview_resampling="nearest",
                blocksize=256,
            )
        item.add_asset(
            "cloud_mask",
            pystac.Asset(
                href=str(cog),
                media_type=pystac.MediaType.COG,
                roles=["cloud"],
                title=f"Bright, cloud-like pixels (band 1 DN >= {BRIGHT_BLUE_DN}; derived)",
                extra_fields={
                    "raster:bands": [{"data_type": "uint8", "spatial_resolution": self.resolution_m}],
                    "classification:classes": [
                        {"value": 0, "name": "clear", "description": "clear"},
                        {"value": 1, "name": "cloud", "description": "bright, cloud-like"},
                    ],
                },
            ),
        )

    def collection(self, render: dict[str, Any], *, summaries: dict[str, Any] | None = None) -> pystac.Collection:
        spec = self.spec
        boxes = np.array([i.bbox for i in self.items])
        bbox = [float(boxes[:, 0].min()), float(boxes[:, 1].min()), float(boxes[:, 2].max()), float(boxes[:, 3].max())]
        starts = [i.common_metadata.start_datetime or i.datetime for i in self.items]
        ends = [i.common_metadata.end_datetime or i.datetime for i in self.items]
        first = self.items[0]
        collection = pystac.Collection(
            id=spec.id,
            title=spec.title,
            description=spec.description,
            extent=pystac.Extent(
                pystac.SpatialExtent([bbox]),
                pystac.TemporalExtent([[min(s for s in starts if s), max(e for e in ends if e)]]),
            ),
            license=spec.license,
            keywords=spec.keywords,
            providers=[pystac.Provider.from_dict(p) for p in spec.providers],
            extra_fields={
                TIME_RESOLVED_FIELD: spec.time_resolved,
                # The render extension's default view: tiles and TileJSON use it without parameters.
                "renders": {"default": {"title": spec.title, **render}},
                PROVENANCE_FIELD: {
                    "sources": [s.provenance() for s in spec.sources],
                    "derived_from": spec.derived_from,
                    "notes": spec.notes,
                    "built_by": "python -m stacgis_raster.demo_data",
                },
                # What every item holds, so a client knows the bands before reading any item.
                "item_assets": {
                    key: {
                        "title": asset.title,
                        "type": asset.media_type,
                        "roles": asset.roles,
                        **{
                            k: v
                            for k, v in asset.extra_fields.items()
                            if k in {"eo:bands", "raster:bands", "classification:classes"}
                        },
                    }
                    for key, asset in first.assets.items()
                },
            },
            stac_extensions=[EO_EXT, RASTER_EXT, "https://stac-extensions.github.io/item-assets/v1.0.0/schema.json"],
        )
        for key, value in (summaries or {}).items():
            collection.summaries.add(key, value)
        collection.summaries.add("proj:code", sorted({str(i.properties["proj:code"]) for i in self.items}))
        collection.add_items(self.items)
        return collection
