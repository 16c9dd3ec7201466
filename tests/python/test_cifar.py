"""The full CIFAR-10 test split, as WebDataset shards written by a peer."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from PIL import Image as PILImage

import shardloader as sl

NUM_SAMPLES = 10_000
BATCH_SIZE = 500


def _image_path(cifar_dir, key: str):
    """"bird_0988" -> images/bird/0988.jpg"""
    class_name, _, number = key.rpartition("_")
    return cifar_dir / "images" / class_name / f"{number}.jpg"


@pytest.fixture(scope="module")
def cifar_batches(cifar_dir):
    """One pass over all 10 shards, in shard order, as NumPy arrays."""
    shards = sorted(str(p) for p in (cifar_dir / "shards").glob("*.tar"))
    assert len(shards) == 10, shards
    loader = sl.Loader(shards, fields={"image": sl.Image("jpg", size=32),
                                       "label": sl.Int("cls")},
                       batch_size=BATCH_SIZE, shuffle=False, output="numpy")
    batches = list(loader)
    assert len(batches) == len(loader)
    return batches


def test_class_order_matches_sorted_folders(cifar_dir):
    classes = (cifar_dir / "classes.txt").read_text().split()
    folders = sorted(p.name for p in (cifar_dir / "images").iterdir() if p.is_dir())
    assert classes == folders
    assert len(classes) == 10


def test_all_samples_load_once_with_the_right_labels(cifar_dir, cifar_batches):
    classes = (cifar_dir / "classes.txt").read_text().split()
    keys = []
    for batch in cifar_batches:
        assert batch["image"].shape == (len(batch["__key__"]), 32, 32, 3)
        assert batch["image"].dtype == np.uint8
        assert batch["label"].dtype == np.int64
        assert batch["label"].shape == (len(batch["__key__"]),)
        for key, label in zip(batch["__key__"], batch["label"].tolist()):
            class_name = key.rpartition("_")[0]
            assert label == classes.index(class_name), key
        keys.extend(batch["__key__"])
    assert [len(b["__key__"]) for b in cifar_batches] == [BATCH_SIZE] * (NUM_SAMPLES // BATCH_SIZE)
    counts = collections.Counter(keys)
    repeated = [k for k, n in counts.items() if n > 1]
    assert not repeated, f"keys read more than once: {repeated[:10]}"
    expected = {f"{p.parent.name}_{p.stem}" for p in (cifar_dir / "images").glob("*/*.jpg")}
    assert len(expected) == NUM_SAMPLES
    assert set(keys) == expected


def test_cls_in_shards_is_the_class_index(cifar_dir):
    """The shards' own .cls (read raw) agrees with classes.txt order."""
    classes = (cifar_dir / "classes.txt").read_text().split()
    shard = sorted((cifar_dir / "shards").glob("*.tar"))[3]
    loader = sl.Loader(str(shard), fields={"cls": sl.Bytes("cls")}, batch_size=100,
                       shuffle=False)
    seen = 0
    for batch in loader:
        for key, raw in zip(batch["__key__"], batch["cls"].tolist()):
            assert int(raw.decode("ascii")) == classes.index(key.rpartition("_")[0])
            seen += 1
    assert seen == 1000


def test_pixels_match_pil(cifar_dir, cifar_batches):
    """Decoded pixels are PIL's decode of the same JPEG file (decoders may
    differ by a level or two)."""
    per_image_mean = []
    worst = 0
    for batch in cifar_batches:
        for key, image in zip(batch["__key__"], batch["image"]):
            with PILImage.open(_image_path(cifar_dir, key)) as pil:
                assert pil.size == (32, 32)
                reference = np.asarray(pil.convert("RGB"), dtype=np.int16)
            diff = np.abs(image.astype(np.int16) - reference)
            per_image_mean.append(float(diff.mean()))
            worst = max(worst, int(diff.max()))
    assert len(per_image_mean) == NUM_SAMPLES
    assert max(per_image_mean) < 2.0, f"an image differs by {max(per_image_mean):.2f} on average"
    assert float(np.mean(per_image_mean)) < 1.0
    assert worst <= 32


def test_shard_bytes_equal_the_image_files(cifar_dir):
    """Bytes of the .jpg members are the files of images/ (one shard)."""
    shard = sorted((cifar_dir / "shards").glob("*.tar"))[0]
    loader = sl.Loader(str(shard), fields={"jpg": sl.Bytes("jpg")}, batch_size=250,
                       shuffle=False)
    count = 0
    for batch in loader:
        for key, data in zip(batch["__key__"], batch["jpg"].tolist()):
            assert data == _image_path(cifar_dir, key).read_bytes(), key
            count += 1
    assert count == 1000
