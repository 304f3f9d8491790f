"""Routes of the public API, one module per resource."""
