"""The product's headline kind of question through the whole stack: NDVI statistics over an area
from a collection of many scenes, read by raster-tools from the STAC API server `make up` runs, the
number reaching the browser equal to NDVI computed here from the untiled scene."""

from __future__ import annotations

import re

import numpy as np
import pytest
import rasterio
import shapely
from pyproj import Transformer
from shapely.geometry import box
from shapely.ops import transform as shapely_transform

from .client import ChatUser, ScriptedModel
from .conftest import require
from .reference import cog_path

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
AREA = [-34.90, -8.02, -34.86, -7.98]


def ndvi_rules(tag: str) -> list[dict[str, object]]:
    return [
        {
            "name": f"{tag}-answer",
            "match": {"last_user": tag, "after_tools": ["get_scene_statistics"]},
            "content": (
                "Mean NDVI over the area is {{tool:get_scene_statistics:statistics.mean}} from "
                "{{tool:get_scene_statistics:items.used}} scenes."
            ),
            "chunk_chars": 9,
        },
        {
            "name": f"{tag}-call",
            "match": {"last_user": tag, "step": 0},
            "thinking": "NDVI comes from the red and near-infrared bands of the scenes covering the area.",
            "tool_calls": [
                {
                    "name": "get_scene_statistics",
                    "arguments": {"collection_id": "landsat7-olinda-scenes", "expression": "ndvi", "bbox": AREA},
                }
            ],
        },
    ]


def ndvi_of_the_whole_scene(bbox: list[float]) -> np.ndarray:
    """NDVI of the untiled scene's pixels whose centres lie in the box (B4 = nir, B3 = red), without
    the bright pixels the tiles' cloud masks flag (band 1 DN >= 120, as the collection describes)."""
    with rasterio.open(cog_path("landsat7-olinda")) as scene:
        blue, red, nir = (scene.read(b).astype("float64") for b in (1, 3, 4))
        transform, crs = scene.transform, scene.crs
    to_scene = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    area = shapely_transform(lambda x, y: to_scene.transform(x, y), box(*bbox).segmentize(0.001))
    rows, cols = np.indices(red.shape)
    xs, ys = transform * (cols + 0.5, rows + 0.5)
    inside = shapely.contains_xy(area, xs.ravel(), ys.ravel())
    total = (nir + red).ravel()
    keep = inside & (total > 0) & (blue.ravel() < 120)
    return ((nir - red).ravel()[keep]) / total[keep]


@pytest.mark.asyncio
async def test_ndvi_over_many_scenes_reaches_the_browser_equal_to_ndvi_of_the_whole_scene(
    user: ChatUser, scripted: ScriptedModel, tag: str
) -> None:
    await require("raster-tools")
    await scripted.add(*ndvi_rules(tag))

    run = await user.chat(f"Show me NDVI statistics for central Olinda [{tag}]")

    done = run.done()
    assert [s["toolName"] for s in run.tools("tool_start")] == ["get_scene_statistics"], run.describe()
    assert not run.of("tool_error"), run.describe()
    expected = ndvi_of_the_whole_scene(AREA)
    answer = run.content
    assert answer == done["content"]
    numbers = [float(n) for n in NUMBER.findall(answer)]
    assert numbers[0] == pytest.approx(expected.mean(), abs=1e-5), f"{answer!r} vs {expected.mean():.6f}"
    assert numbers[1] > 10, f"a mosaic of many scenes was expected: {answer!r}"
