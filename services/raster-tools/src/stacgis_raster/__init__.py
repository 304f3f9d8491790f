"""Raster tool server: STAC collections of COGs as MCP tools and map tiles."""
