"""Where the project's own files live, whether run from a checkout or an installed wheel."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent
SQL_DIR = PROJECT_ROOT / "sql"
EXPECTATIONS_DIR = PROJECT_ROOT / "expectations"
PERSONALITIES_DIR = PACKAGE_DIR / "personalities"
PROMPTS_DIR = PACKAGE_DIR / "prompts"
SAMPLE_DIR = PACKAGE_DIR / "data" / "sample"
