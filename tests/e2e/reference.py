"""Answers computed here, independently of the services, from the same files and features."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import rasterio
import shapely
from shapely.geometry import shape
from shapely.geometry.base import BaseGeometry

from stacgis_common.testing import token_for

from .client import VECTOR_TOOLS

ROOT = Path(__file__).resolve().parents[2]
STAC = ROOT / ".local" / "data" / "stac"


async def vector_feature(dataset: str, feature_id: str) -> dict[str, Any]:
    """The full GeoJSON Feature from vector-tools' internal endpoint."""
    async with httpx.AsyncClient(timeout=30.0) as http:
        response = await http.get(
            f"{VECTOR_TOOLS}/features/{dataset}/{feature_id}",
            headers={"Authorization": f"Bearer {token_for('e2e-reference')}"},
        )
    assert response.status_code == 200, f"vector-tools /features/{dataset}/{feature_id}: {response.text[:300]}"
    feature = response.json()
    assert isinstance(feature, dict)
    return feature


def cog_path(collection_id: str) -> Path:
    """The first item's data asset of a collection in the static catalog `make up` built."""
    collection = STAC / collection_id
    items = sorted(collection.glob("*/*.json"))
    assert items, f"no items of {collection_id} under {collection}: was the demo data built?"
    item = json.loads(items[0].read_text())
    asset = next(iter(item["assets"].values()))
    return Path(items[0].parent / str(asset["href"])).resolve()


def area_weighted_mean(path: Path, geometry: BaseGeometry, band: int = 1) -> float:
    """Mean of the valid cells under a polygon on a geographic grid, each cell weighted by the
    share of it the polygon covers (exact polygon-box intersections) times its area on the sphere
    (proportional to the difference of the sines of its edge latitudes)."""
    with rasterio.open(path) as dataset:
        assert dataset.crs is not None and dataset.crs.is_geographic, f"{path} is not on a geographic grid"
        data = dataset.read(band, masked=True)
        transform = dataset.transform
    rows, cols = np.indices(data.shape)
    assert transform.b == transform.d == 0, f"{path} is rotated"
    west, north = transform.c + cols * transform.a, transform.f + rows * transform.e
    east, south = west + transform.a, north + transform.e
    cells = shapely.box(west, np.minimum(north, south), east, np.maximum(north, south))
    shapely.prepare(geometry)
    covered = shapely.area(shapely.intersection(cells, geometry)) / shapely.area(cells)
    top, bottom = np.radians(np.maximum(north, south)), np.radians(np.minimum(north, south))
    weights = covered * np.abs(np.sin(top) - np.sin(bottom)) * ~np.ma.getmaskarray(data)
    assert weights.sum() > 0, "the polygon covers no valid cell"
    return float((weights * data.filled(0).astype("float64")).sum() / weights.sum())


def feature_geometry(feature: dict[str, Any]) -> BaseGeometry:
    return shape(feature["geometry"])
