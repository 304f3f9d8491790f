"""Generated from proto/stacgis/v1 by proto/python/generate.py; do not edit."""
