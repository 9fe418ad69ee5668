"""Download one pinned sdist from the package index without building anything.

`pip download --no-binary :all:` prepares the sdist's metadata, which builds its build requirements from
source too (CMake itself: ~35 minutes on 2 cores). This reads the index's JSON simple API (PEP 691) and
downloads the file, checking the pinned sha256; nothing is built.

    python scripts/fetch_sdist.py NAME VERSION SHA256 DEST_DIR
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import urllib.request
from pathlib import Path

ACCEPT = "application/vnd.pypi.simple.v1+json"


def index_url() -> str:
    """The index pip would use (PIP_INDEX_URL), else PyPI."""
    return os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


def sdist_url(name: str, version: str) -> tuple[str, str]:
    """The sdist's file name and URL, from the index's JSON project page."""
    request = urllib.request.Request(f"{index_url()}/{name}/", headers={"Accept": ACCEPT})
    with urllib.request.urlopen(request, timeout=60) as response:
        page = json.load(response)
    normalized = name.replace("-", "_")
    for entry in page["files"]:
        if entry["filename"] == f"{normalized}-{version}.tar.gz":
            return entry["filename"], entry["url"]
    raise SystemExit(f"fetch_sdist: {name}=={version} has no sdist on {index_url()}")


def main(name: str, version: str, sha256: str, dest: str) -> None:
    filename, url = sdist_url(name, version)
    target = Path(dest) / filename
    partial = target.with_suffix(".part")
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=600) as response, partial.open("wb") as out:
        while block := response.read(1 << 20):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != sha256:
        partial.unlink()
        raise SystemExit(f"fetch_sdist: {filename} has sha256 {digest.hexdigest()}, pinned {sha256}; refused")
    partial.rename(target)
    print(target)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
