"""The tools the agent can call: MCP tool servers, frontend (UI) tools and built-in tools."""
