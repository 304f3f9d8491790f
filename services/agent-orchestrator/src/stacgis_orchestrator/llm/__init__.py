"""Chat model providers (Ollama native, OpenAI-compatible) and what they stream."""
