"""HTTP API of the orchestrator (`/v1/...`)."""
