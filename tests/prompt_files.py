"""Every prompt file of the project by its name, for tests: the foundation's shared ones (peras/prompts/) and each
stage's own (tasks/<stage>/prompts/). Production code names a stage's file by its path (the stage's `PROMPT_DIR`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = (ROOT / "peras" / "prompts", *sorted((ROOT / "tasks").glob("*/prompts")))
FILES = {path.stem: path for folder in FOLDERS for path in sorted(folder.glob("*.toml")) if path.stem != "answers"}
# Read by their stage's own wrapper of the one reader: Jinja (fuse), the paper's spaced names (recognize), the
# batch's extra keys (priming); every other file is a str.format template `load_prompt` reads.
OWN_WRAPPERS = ("fuser", "recognize_state", "recognize_trait", "recognize_evidence", "batch_umbrela")
FORMAT_PROMPTS = tuple(name for name in FILES if name not in OWN_WRAPPERS)


def prompt_file(name: str) -> Path:
    """The prompt file of this name, wherever it lives."""
    return FILES[name]
