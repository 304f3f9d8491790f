"""stacgis agent-orchestrator: the ReAct agent as a stateless service."""
