"""STAC field names and extension URLs shared by the demo-data builder and the server."""

RENDER_EXT = "https://stac-extensions.github.io/render/v2.0.0/schema.json"
CLASSIFICATION_EXT = "https://stac-extensions.github.io/classification/v2.0.0/schema.json"
EO_EXT = "https://stac-extensions.github.io/eo/v1.1.0/schema.json"

# Collection fields of this project (namespaced as STAC asks for custom fields).
TIME_RESOLVED_FIELD = "stacgis:time_resolved"
PROVENANCE_FIELD = "stacgis:provenance"
