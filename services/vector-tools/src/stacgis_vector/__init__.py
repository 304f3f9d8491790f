"""stacgis vector-tools: real vector datasets as MCP tools over Postgres + pgvector."""
