"""Field decoders from Python: Npy with real arrays, Text, Bytes, Image."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image as PILImage

import shardloader as sl


def write_shard(tmp_path, samples, name="f"):
    with sl.ShardWriter(str(tmp_path / f"{name}-%03d.tar")) as writer:
        for sample in samples:
            writer.write(sample)
    return writer.shards[0].path


def one_batch(shard, fields, batch_size, **kwargs):
    batches = list(sl.Loader(shard, fields=fields, batch_size=batch_size, shuffle=False,
                             **kwargs))
    assert len(batches) == 1
    return batches[0]


# ---------------------------------------------------------------------------
# Npy

@pytest.mark.parametrize("fortran", [False, True], ids=["c_order", "fortran_order"])
def test_npy_lfw_faces(tmp_path, npy_dir, fortran):
    """lfw_subset.npy: 200 real 25x25 float64 faces, one per sample."""
    faces = np.load(npy_dir / "lfw_subset.npy")
    assert faces.shape == (200, 25, 25) and faces.dtype == np.float64
    samples = []
    for i, face in enumerate(faces):
        array = np.asfortranarray(face) if fortran else np.ascontiguousarray(face)
        samples.append({"__key__": f"f{i:03d}", "npy": array, "cls": i})
    shard = write_shard(tmp_path, samples)
    loader = sl.Loader(shard, fields={"face": sl.Npy("npy", shape=(25, 25), dtype="float64"),
                                      "i": sl.Int("cls")},
                       batch_size=64, shuffle=False)
    got = {}
    for batch in loader:
        assert batch["face"].dtype == torch.float64
        assert batch["face"].shape[1:] == (25, 25)
        for key, i, face in zip(batch["__key__"], batch["i"].tolist(), batch["face"]):
            got[i] = face.numpy().copy()
    assert sorted(got) == list(range(200))
    for i in range(200):
        np.testing.assert_array_equal(got[i], faces[i])


def test_npy_real_arrays_of_several_dtypes(tmp_path, npy_dir):
    hog = [np.load(npy_dir / f"astronaut_GRAY_hog_{n}.npy") for n in ("L1", "L2-Hys")]
    gray = np.load(npy_dir / "chessboard_GRAY_U8.npy")
    rgb = np.load(npy_dir / "chessboard_RGB_U8.npy")
    assert hog[0].shape == hog[1].shape and hog[0].dtype == np.float64
    assert gray.shape == (200, 200) and rgb.shape == (200, 200, 3)
    samples = [
        {"__key__": "s0", "hog.npy": hog[0], "img.npy": rgb,
         "f32.npy": gray.astype(np.float32)},
        {"__key__": "s1", "hog.npy": hog[1], "img.npy": np.asfortranarray(rgb[::-1]),
         "f32.npy": np.asfortranarray(gray.T.astype(np.float32))},
    ]
    shard = write_shard(tmp_path, samples)
    batch = one_batch(shard, {"hog": sl.Npy("hog.npy", shape=hog[0].shape, dtype="float64"),
                              "img": sl.Npy("img.npy", shape=(200, 200, 3), dtype="uint8"),
                              "f32": sl.Npy("f32.npy", shape=(200, 200), dtype="float32")},
                      batch_size=2)
    assert batch["__key__"] == ["s0", "s1"]
    assert batch["hog"].dtype == torch.float64 and batch["img"].dtype == torch.uint8
    assert batch["f32"].dtype == torch.float32
    for i in range(2):
        np.testing.assert_array_equal(batch["hog"][i].numpy(), hog[i])
    np.testing.assert_array_equal(batch["img"][0].numpy(), rgb)
    np.testing.assert_array_equal(batch["img"][1].numpy(), rgb[::-1])
    np.testing.assert_array_equal(batch["f32"][0].numpy(), gray.astype(np.float32))
    np.testing.assert_array_equal(batch["f32"][1].numpy(), gray.T.astype(np.float32))


def test_npy_files_read_unchanged(tmp_path, npy_dir):
    """The .npy files themselves (as written by NumPy) are read as is."""
    raw = (npy_dir / "bw_text_skeleton.npy").read_bytes()
    expected = np.load(npy_dir / "bw_text_skeleton.npy")
    shard = write_shard(tmp_path, [{"__key__": "t0", "npy": raw}, {"__key__": "t1", "npy": raw}])
    batch = one_batch(shard, {"a": sl.Npy("npy", shape=expected.shape, dtype="uint8")}, 2,
                      output="numpy")
    assert batch["a"].shape == (2, *expected.shape)
    np.testing.assert_array_equal(batch["a"][0], expected)
    np.testing.assert_array_equal(batch["a"][1], expected)


@pytest.mark.parametrize("bad", ["shape", "dtype", "garbage"])
def test_npy_mismatch_is_data_loss_naming_the_key(tmp_path, bad):
    good = np.arange(6, dtype=np.float32).reshape(2, 3)
    wrong = {"shape": np.zeros((3, 2), np.float32), "dtype": np.zeros((2, 3), np.float64),
             "garbage": b"\x93NUMPY not really"}[bad]
    samples = [{"__key__": f"s{i}", "npy": good} for i in range(4)]
    samples[2]["npy"] = wrong
    shard = write_shard(tmp_path, samples)
    with pytest.raises(sl.DataLossError) as info:
        list(sl.Loader(shard, fields={"a": sl.Npy("npy", shape=(2, 3), dtype="float32")},
                       batch_size=4, shuffle=False))
    assert info.value.key == "s2"
    assert "s2" in str(info.value)


# ---------------------------------------------------------------------------
# Text and Bytes

def test_text_field_is_a_list_of_str(tmp_path):
    texts = ["plain", "", "caf\u00e9 \u4e2d\u6587 \U0001F600", "line1\nline2\x00tail", "x" * 5000]
    shard = write_shard(tmp_path, [{"__key__": f"t{i}", "txt": t} for i, t in enumerate(texts)])
    batch = one_batch(shard, {"text": sl.Text("txt")}, batch_size=8)
    assert isinstance(batch["text"], list)
    assert all(isinstance(t, str) for t in batch["text"])
    assert batch["text"] == texts


def test_invalid_utf8_text_is_data_loss(tmp_path):
    samples = [{"__key__": "t0", "txt": "ok"}, {"__key__": "t1", "txt": b"\xff\xfe bad"}]
    shard = write_shard(tmp_path, samples)
    with pytest.raises(sl.DataLossError) as info:
        list(sl.Loader(shard, fields={"text": sl.Text("txt")}, batch_size=2, shuffle=False))
    assert info.value.key == "t1"


def test_bytes_field_is_ragged(tmp_path):
    rng = np.random.default_rng(0)
    blobs = [b"", b"\x00", rng.bytes(1), rng.bytes(777), b"\x00" * 1024, rng.bytes(65536)]
    shard = write_shard(tmp_path, [{"__key__": f"b{i}", "bin": b} for i, b in enumerate(blobs)])
    batch = one_batch(shard, {"data": sl.Bytes("bin")}, batch_size=6)
    ragged = batch["data"]
    assert isinstance(ragged, sl.Ragged)
    assert ragged.values.dtype == torch.uint8 and ragged.values.dim() == 1
    assert ragged.offsets.dtype == torch.int64
    assert ragged.offsets.tolist() == list(np.cumsum([0] + [len(b) for b in blobs]))
    assert ragged.tolist() == blobs
    assert bytes(ragged.values.numpy()) == b"".join(blobs)


def test_batches_stay_valid_after_the_loader_moves_on(tmp_path):
    """Tensors are zero-copy views of pooled memory: a batch kept by the user
    must not be overwritten by later batches."""
    samples = [{"__key__": f"k{i:03d}", "cls": i, "bin": bytes([i]) * 64} for i in range(64)]
    shard = write_shard(tmp_path, samples)
    kept = list(sl.Loader(shard, fields={"c": sl.Int("cls"), "b": sl.Bytes("bin")},
                          batch_size=4, shuffle=False, prefetch_batches=1))
    assert len(kept) == 16
    for n, batch in enumerate(kept):
        assert batch["c"].tolist() == list(range(4 * n, 4 * n + 4))
        assert batch["b"].tolist() == [bytes([i]) * 64 for i in range(4 * n, 4 * n + 4)]


def test_stats_count_samples_batches_and_waiting(tmp_path, caplog):
    samples = [{"__key__": f"k{i:03d}", "cls": i} for i in range(50)]
    shard = write_shard(tmp_path, samples)
    loader = sl.Loader(shard, fields={"c": sl.Int("cls")}, batch_size=10,
                       log_every_s=0.0)
    with caplog.at_level("INFO", logger="shardloader"):
        assert len(list(loader)) == 5
    stats = loader.stats()
    assert (stats.num_samples_read, stats.num_samples_decoded, stats.num_batches) == (50, 50, 5)
    assert stats.num_shards_opened == 1 and stats.num_errors == 0
    assert stats.consumer_wait_s >= 0.0 and stats.num_bytes_read > 0
    assert any("samples read" in r.getMessage() for r in caplog.records)


def test_freed_batches_return_their_memory_to_the_pool(tmp_path):
    """Zero copy both ways: a tensor views the C++ batch slot, and once the
    tensors of a batch are gone the slot is reused, so a warm loader cycles
    through a few buffers instead of allocating one per batch."""
    samples = [{"__key__": f"k{i:03d}", "cls": i} for i in range(200)]
    shard = write_shard(tmp_path, samples)
    loader = sl.Loader(shard, fields={"c": sl.Int("cls")}, batch_size=4,
                       shuffle=False, prefetch_batches=2)
    addresses = set()
    labels = []
    for batch in loader:
        addresses.add(batch["c"].data_ptr())
        labels.extend(batch["c"].tolist())
        del batch
    assert labels == list(range(200))
    assert len(addresses) <= 5, f"50 batches used {len(addresses)} buffers"


# ---------------------------------------------------------------------------
# Image

def _encode(pixels, fmt):
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()


def test_png_decode_is_exact_and_layouts_agree(tmp_path):
    rng = np.random.default_rng(3)
    pixels = [rng.integers(0, 256, size=(16, 16, 3), dtype=np.uint8) for _ in range(3)]
    gray = rng.integers(0, 256, size=(16, 16), dtype=np.uint8)
    samples = [{"__key__": f"p{i}", "png": _encode(p, "PNG")} for i, p in enumerate(pixels)]
    samples.append({"__key__": "p3", "png": _encode(gray, "PNG")})
    shard = write_shard(tmp_path, samples)
    hwc = one_batch(shard, {"im": sl.Image("png", size=16)}, batch_size=4)["im"]
    chw = one_batch(shard, {"im": sl.Image("png", size=16, layout="chw")}, batch_size=4)["im"]
    assert hwc.shape == (4, 16, 16, 3) and hwc.dtype == torch.uint8
    assert chw.shape == (4, 3, 16, 16)
    for i in range(3):
        np.testing.assert_array_equal(hwc[i].numpy(), pixels[i])
    np.testing.assert_array_equal(hwc[3].numpy(), np.stack([gray] * 3, axis=-1))
    assert torch.equal(chw, hwc.permute(0, 3, 1, 2))


def test_image_center_crop_and_stretch_shapes(tmp_path):
    pixels = np.zeros((40, 80, 3), np.uint8)
    pixels[:, :20] = 255  # a white left quarter, cropped away by center_crop
    shard = write_shard(tmp_path, [{"__key__": "w0", "png": _encode(pixels, "PNG")}])
    crop = one_batch(shard, {"im": sl.Image("png", size=20)}, batch_size=1)["im"][0]
    stretch = one_batch(shard, {"im": sl.Image("png", size=(10, 40), resize="stretch")},
                        batch_size=1)["im"][0]
    assert crop.shape == (20, 20, 3)
    assert int(crop.max()) < 64, "center_crop kept the left edge"
    assert stretch.shape == (10, 40, 3)
    assert int(stretch[:, :8].min()) > 192 and int(stretch[:, 12:].max()) < 64


def test_corrupt_image_is_data_loss_naming_the_key(tmp_path):
    good = _encode(np.zeros((8, 8, 3), np.uint8), "JPEG")
    samples = [{"__key__": "i0", "jpg": good}, {"__key__": "i1", "jpg": b"not a jpeg at all"}]
    shard = write_shard(tmp_path, samples)
    with pytest.raises(sl.DataLossError) as info:
        list(sl.Loader(shard, fields={"im": sl.Image("jpg", size=8)}, batch_size=2,
                       shuffle=False))
    assert info.value.key == "i1"
