"""stacgis memory-tools: long-term memories of each user, searchable by meaning."""
