"""PERAS: personality-conditioned LLM relevance assessors with confidence."""

__version__ = "0.1.0"
