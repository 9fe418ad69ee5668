"""A lake connection loads the DuckLake extensions with DuckDB's signature check the first time in a process, and
again whenever a file has changed since (peras/lake.py, extension_config); otherwise without it (0.28 s CPU saved a
connection)."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from peras import lake

pytestmark = pytest.mark.core


@pytest.fixture
def files(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(lake, "_VERIFIED", {})
    paths = [tmp_path / "a.duckdb_extension", tmp_path / "b.duckdb_extension"]
    for path in paths:
        path.write_bytes(b"not an extension")
    return paths


def checked(paths: list[Path]) -> bool:
    return "allow_unsigned_extensions" not in lake.extension_config(paths)


def test_the_signature_is_checked_until_every_file_was_loaded_once_and_again_once_one_changes(files):
    assert checked(files)
    lake.remember_verified(files[:1])
    assert checked(files)  # the second file was never loaded with its check
    lake.remember_verified(files)
    assert not checked(files)
    os.utime(files[1], ns=(0, 0))  # replaced or touched since: checked again
    assert checked(files)
    lake.remember_verified(files)
    files[0].write_bytes(b"another file of another size")
    assert checked(files)


def test_a_file_replaced_after_its_check_is_checked_again_and_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(lake, "_VERIFIED", {})
    copy = tmp_path / "ducklake.duckdb_extension"
    copy.write_bytes(lake.extension_path(*lake.EXTENSIONS[0]).read_bytes())
    lake.remember_verified([copy])
    # the same file with its signature (the last 256 bytes) spoiled: loadable unchecked, refused by the check
    spoiled = bytearray(copy.read_bytes())
    spoiled[-1] ^= 0xFF
    before = copy.stat().st_mtime_ns
    copy.write_bytes(bytes(spoiled))
    os.utime(copy, ns=(before + 10**9, before + 10**9))
    con = duckdb.connect(config=lake.extension_config([copy]))
    try:
        with pytest.raises(duckdb.Error, match="signature"):
            con.execute(f"load {lake.quoted(str(copy))}")
    finally:
        con.close()


def test_the_real_extensions_load_checked_then_unchecked(monkeypatch):
    monkeypatch.setattr(lake, "_VERIFIED", {})
    paths = [lake.extension_path(package, name) for package, name in lake.EXTENSIONS]
    for expect_checked in (True, False):
        assert checked(paths) is expect_checked
        con = duckdb.connect(config=lake.extension_config(paths))
        try:
            for path in paths:
                con.execute(f"load {lake.quoted(str(path))}")
            lake.remember_verified(paths)
            loaded = con.execute(
                "select extension_name from duckdb_extensions() where loaded and extension_name in "
                "('ducklake', 'postgres_scanner') order by 1"
            ).fetchall()
        finally:
            con.close()
        assert loaded == [("ducklake",), ("postgres_scanner",)]
