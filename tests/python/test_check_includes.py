"""The dependency rule of cpp/README.md, checked by scripts/check_includes.py.

The script runs over the real tree (it must pass) and over copies with one
rule broken (each must fail), so a broken checker cannot pass silently.
"""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_includes.py"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)],
                          capture_output=True, text=True)


def test_the_tree_follows_the_rule():
    result = run(ROOT)
    assert result.returncode == 0, result.stdout


@pytest.fixture
def tree(tmp_path):
    for name in ("cpp", "bindings"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "CMakeLists.txt", tmp_path / "CMakeLists.txt")
    return tmp_path


def add_include(root, file, included):
    path = root / "cpp" / "shardloader" / file
    text = path.read_text()
    path.write_text(text.replace("namespace shardloader",
                                 f'#include "shardloader/{included}"\n'
                                 "namespace shardloader", 1))


@pytest.mark.parametrize("file,included,expected", [
    ("internal/random.h", "plan/epoch_order.h", "internal/random.h (internal)"),
    ("io/byte_source.h", "format/tar_reader.h", "io/byte_source.h (io)"),
    ("decode/image.cc", "engine/assembler.h", "only loader.cc may include engine/"),
    ("format/tar_reader.cc", "io/local/local_file.h", "(io/local)"),
    ("io/uri.cc", "io/random_access.h", None),  # allowed: same room
])
def test_an_upward_include_fails(tree, file, included, expected):
    add_include(tree, file, included)
    result = run(tree)
    if expected is None:
        assert result.returncode == 0, result.stdout
    else:
        assert result.returncode == 1
        assert expected in result.stdout


def test_an_include_cycle_fails(tree):
    add_include(tree, "io/uri.h", "io/random_access.h")
    add_include(tree, "io/random_access.h", "io/uri.h")
    result = run(tree)
    assert result.returncode == 1
    assert "include cycle" in result.stdout


def test_a_public_header_including_a_private_one_fails(tree):
    add_include(tree, "stats.h", "internal/random.h")
    result = run(tree)
    assert result.returncode == 1
    assert "public header stats.h includes internal/random.h" in result.stdout
