"""Reproducible builder of the demo rasters and their static STAC catalog."""
