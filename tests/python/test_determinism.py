"""Seeds, epochs, thread counts, len(), and the rank/world-size split."""

from __future__ import annotations

import collections

import pytest
import torch

import shardloader as sl
from conftest import KEYED_FIELDS, keyed_label, loader_keys


def batches_of(loader) -> list[dict]:
    """One pass, with every tensor copied (batch memory is recycled)."""
    out = []
    for batch in loader:
        out.append({name: (value.clone() if isinstance(value, torch.Tensor)
                           else sl.Ragged(value.values.clone(), value.offsets.clone())
                           if isinstance(value, sl.Ragged) else list(value))
                    for name, value in batch.items()})
    return out


def assert_same_batches(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        assert x["__key__"] == y["__key__"]
        for name in x:
            if isinstance(x[name], torch.Tensor):
                assert x[name].dtype == y[name].dtype
                assert torch.equal(x[name], y[name]), name
            elif isinstance(x[name], sl.Ragged):
                assert x[name].tolist() == y[name].tolist(), name
            else:
                assert x[name] == y[name], name


def keyed_loader(shards, **kwargs):
    kwargs.setdefault("batch_size", 16)
    return sl.Loader(shards, fields=KEYED_FIELDS, **kwargs)


def test_batches_carry_the_right_values(keyed_shards):
    for batch in keyed_loader(keyed_shards, seed=3):
        keys = batch["__key__"]
        assert batch["cls"].tolist() == [keyed_label(k) for k in keys]
        assert batch["text"] == [f"sample {keyed_label(k)} \u00e9\u4e2d" for k in keys]
        assert batch["raw"].tolist() == [bytes([keyed_label(k) % 256]) * (keyed_label(k) % 37)
                                         for k in keys]


def test_same_seed_same_batches(keyed_shards):
    a = batches_of(keyed_loader(keyed_shards, seed=7))
    b = batches_of(keyed_loader(keyed_shards, seed=7))
    assert_same_batches(a, b)


def test_different_seed_different_order_same_samples(keyed_shards):
    a = loader_keys(keyed_loader(keyed_shards, seed=1))
    b = loader_keys(keyed_loader(keyed_shards, seed=2))
    assert a != b
    assert sorted(a) == sorted(b) == [f"k{i:04d}" for i in range(200)]


def test_shuffle_actually_shuffles_within_shards(keyed_shards):
    keys = loader_keys(keyed_loader(keyed_shards[:1], seed=5))
    assert sorted(keys) == [f"k{i:04d}" for i in range(25)]
    assert keys != sorted(keys)


def test_no_shuffle_reads_in_order(keyed_shards):
    keys = loader_keys(keyed_loader(keyed_shards, shuffle=False))
    assert keys == [f"k{i:04d}" for i in range(200)]


def test_set_epoch_changes_the_order(keyed_shards):
    loader = keyed_loader(keyed_shards, seed=11)
    assert loader.epoch == 0
    epoch0 = loader_keys(loader)
    assert loader_keys(loader) == epoch0  # iterating again repeats the epoch
    loader.set_epoch(1)
    assert loader.epoch == 1
    epoch1 = loader_keys(loader)
    assert epoch1 != epoch0
    assert sorted(epoch1) == sorted(epoch0)
    loader.set_epoch(0)
    assert loader_keys(loader) == epoch0
    # The constructor's epoch= is the same as set_epoch().
    assert loader_keys(keyed_loader(keyed_shards, seed=11, epoch=1)) == epoch1


def test_set_epoch_mid_iteration_restarts_cleanly(keyed_shards):
    loader = keyed_loader(keyed_shards, seed=2)
    iterator = iter(loader)
    next(iterator)
    loader.set_epoch(3)
    keys = loader_keys(loader)
    assert sorted(keys) == [f"k{i:04d}" for i in range(200)]
    assert keys == loader_keys(keyed_loader(keyed_shards, seed=2, epoch=3))


def test_thread_count_does_not_change_batches(jpeg_shards):
    fields = {"image": sl.Image("jpg", size=(20, 28)), "label": sl.Int("cls")}

    def run(num_threads):
        return batches_of(sl.Loader(jpeg_shards, fields=fields, batch_size=12, seed=9,
                                    window_shards=2, num_threads=num_threads))

    one, two = run(1), run(2)
    assert_same_batches(one, two)
    assert sum(len(b["__key__"]) for b in one) == 160
    assert one[0]["image"].shape == (12, 20, 28, 3)


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 16, 25, 64, 200, 512])
def test_len_equals_batches_yielded(keyed_shards, drop_last, batch_size):
    loader = keyed_loader(keyed_shards, batch_size=batch_size, drop_last=drop_last, seed=1)
    batches = list(loader)
    assert len(loader) == len(batches)
    sizes = [len(b["__key__"]) for b in batches]
    if drop_last:
        assert len(batches) == 200 // batch_size
        assert all(s == batch_size for s in sizes)
    else:
        assert len(batches) == -(-200 // batch_size)
        assert sum(sizes) == 200 == loader.num_samples()
        assert all(s == batch_size for s in sizes[:-1])


@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_split_disjoint_and_complete(keyed_shards, world_size):
    padded = -(-200 // world_size) * world_size
    for remainder, expected in (("pad", padded), ("drop", 200 // world_size * world_size)):
        per_rank = []
        for rank in range(world_size):
            loader = keyed_loader(keyed_shards, rank=rank, world_size=world_size, seed=4,
                                  remainder=remainder)
            assert (loader.rank, loader.world_size) == (rank, world_size)
            keys = loader_keys(loader)
            assert len(keys) == loader.num_samples() == expected // world_size
            assert len(loader) == -(-len(keys) // 16)
            per_rank.append(keys)
        counts = collections.Counter(k for keys in per_rank for k in keys)
        assert sum(counts.values()) == expected
        if remainder == "pad":
            # Every sample once; the padding repeats the epoch's first few.
            assert set(counts) == {f"k{i:04d}" for i in range(200)}
            assert sum(n - 1 for n in counts.values()) == padded - 200
        else:
            assert all(n == 1 for n in counts.values()), "a sample went to two ranks"
        assert all(per_rank), "a rank got no samples"


def test_rank_split_ranks_agree_on_the_shuffle(keyed_shards):
    """Every rank must see a different part whatever the epoch."""
    for epoch in (0, 1):
        a = set(loader_keys(keyed_loader(keyed_shards, rank=0, world_size=2, epoch=epoch)))
        b = set(loader_keys(keyed_loader(keyed_shards, rank=1, world_size=2, epoch=epoch)))
        assert not a & b
        assert len(a | b) == 200


def test_rank_and_world_size_from_environment(keyed_shards, monkeypatch):
    explicit = loader_keys(keyed_loader(keyed_shards, rank=1, world_size=2, seed=4))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    loader = keyed_loader(keyed_shards, seed=4)
    assert (loader.rank, loader.world_size) == (1, 2)
    assert loader_keys(loader) == explicit
    # Explicit arguments win over the environment.
    loader = keyed_loader(keyed_shards, seed=4, rank=0, world_size=1)
    assert (loader.rank, loader.world_size) == (0, 1)
    assert len(loader_keys(loader)) == 200


def test_no_environment_means_single_process(keyed_shards, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    loader = keyed_loader(keyed_shards)
    assert (loader.rank, loader.world_size) == (0, 1)
    assert len(loader_keys(loader)) == 200


def test_workers_split_within_a_rank(keyed_shards):
    seen = collections.Counter()
    for worker in range(2):
        loader = keyed_loader(keyed_shards, worker=worker, num_workers=2, rank=1,
                              world_size=2, seed=0)
        seen.update(loader_keys(loader))
    rank1 = set(loader_keys(keyed_loader(keyed_shards, rank=1, world_size=2, seed=0)))
    assert set(seen) == rank1
    assert all(n == 1 for n in seen.values())


def test_shards_property_lists_resolved_shards(keyed_shards):
    directory = str(keyed_shards[0]).rsplit("/", 1)[0]
    loader = keyed_loader(directory)
    assert loader.shards == sorted(keyed_shards)
    pattern = directory + "/m-{000..007}.tar"
    assert keyed_loader(pattern).shards == list(keyed_shards)
    joined = "::".join(keyed_shards[:3])
    assert keyed_loader(joined).shards == list(keyed_shards[:3])


def test_numpy_output(keyed_shards):
    import numpy as np

    batch = next(iter(keyed_loader(keyed_shards, output="numpy", shuffle=False)))
    assert isinstance(batch["cls"], np.ndarray) and batch["cls"].dtype == np.int64
    assert isinstance(batch["raw"].values, np.ndarray)
    assert batch["raw"].values.dtype == np.uint8
    assert batch["raw"].offsets.dtype == np.int64
    assert batch["cls"].tolist() == list(range(16))
