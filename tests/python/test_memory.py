"""Batch memory: bounded over epochs, pinned where CUDA exists."""

import gc
import os

import numpy as np
import pytest
import torch

import shardloader as sl


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_resident_memory_stays_flat_over_ten_epochs(cifar_dir):
    """Memory is bounded by the configuration (pool, read-ahead, shuffle
    buffer), not by how many epochs run: after a warm-up epoch, nine more
    epochs over the 10,000 CIFAR samples add (almost) nothing."""
    loader = sl.Loader(str(cifar_dir / "shards"),
                       fields={"image": sl.Image("jpg", size=32), "label": sl.Int("cls")},
                       batch_size=256, shuffle=True)
    checksum = 0
    rss = []
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:
            checksum += int(batch["label"].sum())
        gc.collect()
        rss.append(_rss_bytes())
    assert checksum == 10 * sum(i * 1000 for i in range(10))  # every label, every epoch
    growth = max(rss[1:]) - rss[1]
    assert growth < 16 << 20, f"RSS grew by {growth / 2**20:.1f} MiB over epochs 2-10: {rss}"


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="needs a CUDA device: pinned batch memory is only "
                           "possible with a CUDA runtime (CI has none)")
def test_batches_are_pinned_and_copy_asynchronously(cifar_dir):
    loader = sl.Loader(str(cifar_dir / "shards"),
                       fields={"image": sl.Image("jpg", size=32), "label": sl.Int("cls")},
                       batch_size=256, shuffle=False)
    stream = torch.cuda.Stream()
    for n, batch in enumerate(loader):
        assert batch["image"].is_pinned() and batch["label"].is_pinned()
        with torch.cuda.stream(stream):
            on_device = batch["image"].cuda(non_blocking=True)
        stream.synchronize()
        assert torch.equal(on_device.cpu(), batch["image"])
        if n == 3:
            break


def test_without_cuda_batches_use_ordinary_memory(cifar_dir):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: batches are pinned")
    loader = sl.Loader(str(cifar_dir / "shards"), fields={"label": sl.Int("cls")},
                       batch_size=16)
    batch = next(iter(loader))
    assert not batch["label"].is_pinned()
    assert batch["label"].shape == (16,)


def test_memory_mapped_and_pread_reads_give_the_same_batches(tmp_path, jpeg_shards):
    """Local shards are memory-mapped by default (fields viewed, ragged
    values stream-copied into the batch); `memory_map=False` reads them with
    pread. Both give exactly the written bytes, at sizes around the
    streaming copy's 4 KiB threshold and at every alignment."""
    rng = np.random.default_rng(7)
    sizes = [0, 1, 17, 4095, 4096, 4097, 65_537, 200_003] * 3
    written = {}
    with sl.ShardWriter(str(tmp_path / "raw-%02d.tar"), max_count=10) as writer:
        for i, size in enumerate(sizes):
            payload = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()
            written[f"s{i:03d}"] = payload
            writer.write({"__key__": f"s{i:03d}", "bin": payload, "cls": i})
    shards = [s.path for s in writer.shards]

    def read(memory_map, shard_list, fields):
        source = sl.SourceOptions()
        source.memory_map = memory_map
        loader = sl.Loader(shard_list, fields=fields, batch_size=7, shuffle=True, seed=3,
                           source=source)
        return list(loader)

    raw = {"data": sl.Bytes("bin"), "label": sl.Int("cls")}
    for memory_map in (True, False):
        got = {}
        for batch in read(memory_map, shards, raw):
            values, offsets = batch["data"].values.numpy(), batch["data"].offsets.numpy()
            for row, key in enumerate(batch["__key__"]):
                got[key] = values[offsets[row]:offsets[row + 1]].tobytes()
        assert got == written, f"memory_map={memory_map}"
    images = {"image": sl.Image("jpg", size=16), "label": sl.Int("cls")}
    mapped, pread = read(True, jpeg_shards, images), read(False, jpeg_shards, images)
    assert len(mapped) == len(pread) > 0
    for a, b in zip(mapped, pread):
        assert torch.equal(a["image"], b["image"]) and torch.equal(a["label"], b["label"])
