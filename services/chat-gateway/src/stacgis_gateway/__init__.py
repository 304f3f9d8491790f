"""stacgis chat-gateway: the public chat API."""
