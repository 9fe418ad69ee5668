"""A user's TOML data files (model presets, a study's endpoints), read with one clear error a user can act on."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from peras.errors import UsageError


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The parsed file; a missing or unreadable file, or invalid TOML, is one UsageError naming `what` and `path`."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{what} {path}: not valid TOML: {exc}") from exc
