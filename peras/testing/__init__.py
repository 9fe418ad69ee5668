"""Fixtures for tests and benchmarks: a scripted OpenAI-compatible server on loopback."""
