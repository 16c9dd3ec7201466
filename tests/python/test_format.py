"""The C++ sources follow .clang-format (Google style, 100 columns).

`make format` rewrites them in place; this test fails on any file that
clang-format would change, naming it.
"""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ("cpp", "bindings", "tests/cpp", "tests/fuzz", "benchmarks", "cmake")


def cxx_sources():
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*")
                  if p.suffix in (".h", ".cc"))


def test_cxx_sources_follow_clang_format():
    clang_format = shutil.which("clang-format")
    if clang_format is None:
        pytest.fail("clang-format is missing: scripts/install-deps.sh installs it")
    sources = cxx_sources()
    assert len(sources) > 100
    result = subprocess.run([clang_format, "--dry-run", "-Werror", *map(str, sources)],
                            cwd=ROOT, capture_output=True, text=True)
    changed = sorted({line.split(":")[0] for line in result.stderr.splitlines()
                      if ": error:" in line})
    assert result.returncode == 0, "not formatted (run `make format`): " + ", ".join(changed)
