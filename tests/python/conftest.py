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


# ---------------------------------------------------------------------------
# A directory of small files (ImageFolder layout) and its packed shards

class SourceTree:
    """A directory tree made at test time and what packing it must give.

    ``samples``: key -> {extension: bytes}, including the ``cls`` label that
    ``pack`` adds (index of the top folder in sorted order); ``classes``: the
    class folders in sorted order."""

    def __init__(self, root: Path, samples: dict[str, dict[str, bytes]],
                 classes: list[str]):
        self.root = root
        self.samples = samples
        self.classes = classes

    def members(self) -> set[str]:
        return {f"{key}.{ext}" for key, fields in self.samples.items() for ext in fields}


SOURCE_EXTENSIONS = ("jpg", "json", "seg.png")


def make_source_tree(root: Path, variant: str) -> SourceTree:
    """Writes an ImageFolder tree under ``root``. Each sample has a .jpg
    (random binary bytes: NULs, 0xff, ...), a .json (empty for one sample) and
    a .seg.png (an extension with a dot). ``variant``: "short_names" keeps
    every path short; "long_names" uses realistic names and a path of more
    than 100 bytes (beyond the ustar name field)."""
    import random

    rng = random.Random(f"tree-{variant}")
    if variant == "short_names":
        stems = {"a": ["a/k1", "a/k2"], "b": ["b/k1", "b/n/k3"], "c": ["c/k4"]}
    elif variant == "long_names":
        long_stem = "zebra/" + "d" * 60 + "/" + "e" * 70
        stems = {"cat": ["cat/cat_0001", "cat/cat_0002"],
                 "dog": ["dog/dog_0001", "dog/nested/dog_0100"],
                 "zebra": [long_stem]}
        assert len(long_stem + ".seg.png") > 100
    else:
        raise ValueError(variant)
    classes = sorted(stems)
    samples: dict[str, dict[str, bytes]] = {}
    for label, class_name in enumerate(classes):
        for key in stems[class_name]:
            fields = {
                "jpg": b"\xff\xd8\x00\x00" + rng.randbytes(rng.randrange(100, 3000)) + b"\x00",
                "json": b"" if key.endswith("2") else
                        ('{"key": "%s", "caf\u00e9": true}' % key).encode(),
                "seg.png": bytes(range(256)) * rng.randrange(1, 4),
            }
            for ext, data in fields.items():
                path = root / f"{key}.{ext}"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            samples[key] = {**fields, "cls": str(label).encode()}
    # Files pack must ignore: hidden files and names without an extension.
    (root / classes[0] / ".hidden.jpg").write_bytes(b"hidden")
    (root / classes[0] / "NOTES").write_bytes(b"no extension")
    return SourceTree(root, samples, classes)


@pytest.fixture(scope="session", params=["short_names", "long_names"])
def source_tree(request, tmp_path_factory) -> SourceTree:
    return make_source_tree(tmp_path_factory.mktemp(f"src-{request.param}"), request.param)


class Packed:
    """The output of packing a SourceTree: directory, shard paths, index."""

    def __init__(self, tree: SourceTree, out_dir: Path, method: str):
        self.tree = tree
        self.out_dir = out_dir
        self.method = method
        self.shards = sorted(str(p) for p in out_dir.glob("*.tar"))
        self.index_path = out_dir / "index.json"


PACK_MAX_COUNT = 2


def pack_with_cli(tree: SourceTree, out_dir: Path) -> Packed:
    import subprocess

    out_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [*shardloader_command(), "pack", str(tree.root), str(out_dir / "train-%06d.tar"),
         "--max-count", str(PACK_MAX_COUNT), "--threads", "2", "--no-shuffle"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"shardloader pack failed:\n{result.stdout}\n{result.stderr}"
    assert f"wrote {len(tree.samples)} samples" in result.stdout, result.stdout
    return Packed(tree, out_dir, "cli")


def pack_with_function(tree: SourceTree, out_dir: Path) -> Packed:
    from shardloader.cli.pack import pack

    out_dir.mkdir(parents=True, exist_ok=True)
    writer = pack(str(tree.root), str(out_dir / "train-{000000..}.tar"),
                  max_count=PACK_MAX_COUNT, num_threads=2, shuffle=False,
                  progress=False)
    assert sum(s.num_samples for s in writer.shards) == len(tree.samples)
    assert os.path.abspath(writer.index_path) == str(out_dir / "index.json")
    return Packed(tree, out_dir, "function")


@pytest.fixture(scope="session", params=["cli", "function"])
def packed(request, source_tree, tmp_path_factory) -> Packed:
    """``source_tree`` packed by the ``shardloader pack`` command or by the
    ``pack()`` function, 2 samples per shard."""
    out_dir = tmp_path_factory.mktemp(f"packed-{request.param}") / "out"
    if request.param == "cli":
        return pack_with_cli(source_tree, out_dir)
    return pack_with_function(source_tree, out_dir)
