"""Local stand-in for Ollama: its HTTP API over a scripted back end, a real small model and real embeddings."""
