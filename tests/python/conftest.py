"""Shared fixtures and helpers of shardloader's Python test suite.

Real data lives outside the repository, in ``<repo>/../shared/data`` (see its
README); tests that need it skip with a clear reason when it is absent.
Everything else builds its own small inputs at test time, with the real
ShardWriter, the real ``shardloader`` command, GNU tar and PIL.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

import shardloader as sl

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT.parent / "shared" / "data"


# ---------------------------------------------------------------------------
# Real data

def data_path(*parts: str) -> Path:
    """A path under the shared data folder; skips the test if it is absent."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real test data not found: {path} (expected the shared data "
                    f"folder beside the repository, at {DATA_DIR})")
    return path


@pytest.fixture(scope="session")
def cifar_dir() -> Path:
    """``../shared/data/cifar10-test``: images/<class>/NNNN.jpg, shards/, classes.txt."""
    return data_path("cifar10-test")


@pytest.fixture(scope="session")
def wds_testdata_dir() -> Path:
    """``../shared/data/formats/webdataset``: WebDataset's own test shards."""
    return data_path("formats", "webdataset")


@pytest.fixture(scope="session")
def npy_dir() -> Path:
    """``../shared/data/edge/npy``: real .npy arrays."""
    return data_path("edge", "npy")


# ---------------------------------------------------------------------------
# The command-line tool

def shardloader_command() -> list[str]:
    """The installed ``shardloader`` console script (beside this Python first)."""
    beside = Path(sys.executable).parent / "shardloader"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("shardloader")
    if found is None:
        pytest.fail("the `shardloader` console script is not installed "
                    "(expected beside sys.executable or on PATH)")
    return [found]


# ---------------------------------------------------------------------------
# Reading helpers

def read_all(loader) -> list[dict]:
    """Every batch of one pass over ``loader``."""
    return list(loader)


def loader_keys(loader) -> list[str]:
    """The sample keys of one pass over ``loader``, in order."""
    return [key for batch in loader for key in batch["__key__"]]


def tar_samples(path: str | os.PathLike) -> dict[str, dict[str, bytes]]:
    """Python's tarfile, grouped by the WebDataset convention (key = path up to
    the first dot of the file name): an independent reading of a shard."""
    samples: dict[str, dict[str, bytes]] = {}
    with tarfile.open(path, "r:") as tar:
        for member in tar:
            if not member.isfile():
                continue
            directory, _, name = member.name.rpartition("/")
            stem, _, ext = name.partition(".")
            key = f"{directory}/{stem}" if directory else stem
            samples.setdefault(key, {})[ext] = tar.extractfile(member).read()
    return samples


def tar_member_offsets(path: str | os.PathLike) -> list[tuple[str, int, int, int]]:
    """(name, header offset, data offset, size) of each member, per tarfile."""
    with tarfile.open(path, "r:") as tar:
        return [(m.name, m.offset, m.offset_data, m.size) for m in tar]


# ---------------------------------------------------------------------------
# Small shards made at test time

def keyed_label(key: str) -> int:
    """The label the synthetic shards carry for ``key`` ("k0042" -> 42)."""
    return int(key[1:])


def make_keyed_shards(directory: Path, *, num_samples: int, per_shard: int,
                      prefix: str = "m") -> list[str]:
    """Writes ``num_samples`` samples ``k0000``... (``.cls`` = the number,
    ``.txt`` = text with non-ASCII, ``.bin`` = variable-length bytes) into
    shards of ``per_shard`` samples with the real ShardWriter; returns the
    shard paths in order."""
    directory.mkdir(parents=True, exist_ok=True)
    with sl.ShardWriter(str(directory / f"{prefix}-%03d.tar"),
                        max_count=per_shard) as writer:
        for i in range(num_samples):
            writer.write({"__key__": f"k{i:04d}", "cls": i,
                          "txt": f"sample {i} \u00e9\u4e2d",
                          "bin": bytes([i % 256]) * (i % 37)})
    paths = [s.path for s in writer.shards]
    assert len(paths) == -(-num_samples // per_shard)
    return paths


KEYED_FIELDS = {"cls": sl.Int("cls"), "text": sl.Text("txt"), "raw": sl.Bytes("bin")}


@pytest.fixture(scope="session")
def keyed_shards(tmp_path_factory) -> list[str]:
    """8 shards of 25 samples (200 in all) with .cls/.txt/.bin fields."""
    return make_keyed_shards(tmp_path_factory.mktemp("keyed"), num_samples=200,
                             per_shard=25)


def make_jpeg_shards(directory: Path, *, num_samples: int, per_shard: int) -> list[str]:
    """Shards of small real JPEGs (noise + gradients, encoded by PIL) with
    .cls labels; returns the shard paths."""
    import io

    from PIL import Image as PILImage

    rng = np.random.default_rng(1234)
    directory.mkdir(parents=True, exist_ok=True)
    with sl.ShardWriter(str(directory / "img-%03d.tar"), max_count=per_shard) as writer:
        for i in range(num_samples):
            height, width = 24 + (i % 5) * 4, 30 + (i % 3) * 6
            base = np.linspace(0, 255, width, dtype=np.float32)[None, :, None]
            noise = rng.integers(0, 64, size=(height, width, 3))
            pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
            buffer = io.BytesIO()
            PILImage.fromarray(pixels).save(buffer, format="JPEG", quality=90)
            writer.write({"__key__": f"k{i:04d}", "jpg": buffer.getvalue(), "cls": i})
    return [s.path for s in writer.shards]


@pytest.fixture(scope="session")
def jpeg_shards(tmp_path_factory) -> list[str]:
    """4 shards of 40 small JPEGs each (160 in all)."""
    return make_jpeg_shards(tmp_path_factory.mktemp("jpeg"), num_samples=160,
                            per_shard=40)
