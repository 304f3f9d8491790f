"""STAC field names and extension URLs shared by the demo-data builder and the server, and how
STAC writes a time."""

import datetime as dt

RENDER_EXT = "https://stac-extensions.github.io/render/v2.0.0/schema.json"
CLASSIFICATION_EXT = "https://stac-extensions.github.io/classification/v2.0.0/schema.json"
EO_EXT = "https://stac-extensions.github.io/eo/v1.1.0/schema.json"

# Collection fields of this project (namespaced as STAC asks for custom fields).
TIME_RESOLVED_FIELD = "stacgis:time_resolved"
PROVENANCE_FIELD = "stacgis:provenance"


def iso(value: dt.datetime) -> str:
    """RFC 3339 in UTC with a Z, as STAC writes datetimes."""
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
