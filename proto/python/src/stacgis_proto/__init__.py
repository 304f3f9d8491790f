"""Python types of the stacgis contract (generated from proto/stacgis/v1; see proto/python/generate.py)."""
