"""Batch memory: bounded over epochs, pinned where CUDA exists."""

import gc
import os

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
