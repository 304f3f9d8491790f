"""Shared plumbing of the stacgis services."""
