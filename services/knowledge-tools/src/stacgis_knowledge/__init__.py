"""stacgis knowledge-tools: the product's knowledge base, searchable by meaning and by words."""
