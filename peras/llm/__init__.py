"""LLM access: the async OpenAI-compatible client, its transports, and the answer parsers."""
