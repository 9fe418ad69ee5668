"""ir_metadata headers (schema 0.1, https://www.ir-metadata.org): what made an exported file, as YAML in `#` lines.

The schema puts the block at the head of a run file, `# ir_metadata.start` ... `# ir_metadata.end`, every YAML line
behind `# ` (repro_eval's MetadataHandler writes and reads it so). ir_measures 0.4.3 and pytrec_eval cannot skip a
`#` line in a qrels or a run file (a ValueError on the first one), so PERAS writes the block into a side file
`<file>.ir_metadata` and the qrels and run files stay as every reader takes them: `cat f.ir_metadata f` is the
annotated file the schema describes. The block holds no time and no path: the same export replayed from the same
warehouse and checkout is the same bytes.
"""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

import peras

START = "# ir_metadata.start"
END = "# ir_metadata.end"
SUFFIX = ".ir_metadata"
SCHEMA_VERSION = "0.1"
REPOSITORY_ROOT = Path(peras.__file__).resolve().parent.parent


def side_path(path: Path) -> Path:
    """Where the ir_metadata block of an exported file goes."""
    return path.with_name(path.name + SUFFIX)


def header_text(tag: str, components: dict[str, Any]) -> str:
    """The block: schema and run version, the tag, then the PRIMAD components given (platform, implementation,
    method, actor, data), every line behind `# `."""
    document = {"schema-version": SCHEMA_VERSION, "run-version": "1.0", "tag": tag} | components
    body = yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=4096, allow_unicode=True)
    return "".join(f"{line}\n" for line in [START, *(f"# {row}" for row in body.splitlines()), END])


def read_header(text: str) -> dict[str, Any]:
    """The YAML of the block at the head of `text` (a side file or an annotated file); {} when it has none."""
    lines = text.splitlines()
    if not lines or lines[0] != START or END not in lines:
        return {}
    body = "\n".join(line[2:] for line in lines[1 : lines.index(END)])
    loaded = yaml.safe_load(body)
    return loaded if isinstance(loaded, dict) else {}


def platform(libraries: list[str]) -> dict[str, Any]:
    """The platform component: PERAS and the named Python distributions, with their installed versions."""
    return {"software": {"libraries": {"python": [f"peras=={peras.__version__}", *map(installed, libraries)]}}}


def installed(distribution: str) -> str:
    """`name==version` of an installed distribution, or `name` alone when it is not installed."""
    try:
        return f"{distribution}=={metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return distribution


def implementation(cmd: str) -> dict[str, Any]:
    """The implementation component: the command that re-makes the file and the commit of the code that made it."""
    return {"executable": {"cmd": cmd}, "source": {"lang": ["python", "sql"], "commit": source_commit()}}


@functools.cache
def source_commit() -> str:
    """The git commit of the PERAS checkout running (`-dirty` when tracked files differ from it), or 'unknown' when
    PERAS runs from an installed package, not a checkout."""
    if not (REPOSITORY_ROOT / ".git").exists():
        return "unknown (not a git checkout)"
    try:
        head = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown (git failed)"
    return head + ("-dirty" if changed else "")


def git(*args: str) -> str:
    """One git command's output in the checkout PERAS runs from."""
    done = subprocess.run(  # noqa: S603 - fixed git arguments
        ["git", "-C", str(REPOSITORY_ROOT), *args],  # noqa: S607 - git from PATH
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()
