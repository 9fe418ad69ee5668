"""tests/support."""
