"""PyTorch DataLoader integration through shardloader.torch.ShardDataset:
an IterableDataset yielding whole batches, used with batch_size=None, that
splits shards across DataLoader workers."""

from __future__ import annotations

import collections

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

import shardloader as sl
from conftest import keyed_label

FIELDS = {"label": sl.Int("cls"), "text": sl.Text("txt"), "raw": sl.Bytes("bin")}


def _shard_dataset():
    from shardloader.torch import ShardDataset

    return ShardDataset


def run_dataloader(shards, num_workers, context=None, **loader_kwargs):
    """(batches, keys) of one pass of a DataLoader over a ShardDataset."""
    dataset = _shard_dataset()(shards, FIELDS, **loader_kwargs)
    assert isinstance(dataset, IterableDataset)
    extra = {}
    if num_workers > 0:
        extra = {"timeout": 120, "multiprocessing_context": context}
    loader = DataLoader(dataset, batch_size=None, num_workers=num_workers, **extra)
    batches = list(loader)
    keys = [k for b in batches for k in b["__key__"]]
    return batches, keys


def check_batches(batches, batch_size):
    for batch in batches:
        keys = batch["__key__"]
        assert 1 <= len(keys) <= batch_size
        assert isinstance(batch["label"], torch.Tensor)
        assert batch["label"].dtype == torch.int64
        assert batch["label"].tolist() == [keyed_label(k) for k in keys]
        assert batch["text"] == [f"sample {keyed_label(k)} \u00e9\u4e2d" for k in keys]
        assert batch["raw"].tolist() == [bytes([keyed_label(k) % 256]) * (keyed_label(k) % 37)
                                         for k in keys]


def assert_each_once(keys, expected):
    repeated = [k for k, n in collections.Counter(keys).items() if n > 1]
    assert not repeated, f"samples delivered more than once: {repeated[:10]}"
    assert set(keys) == set(expected)


ALL_KEYS = [f"k{i:04d}" for i in range(200)]


def test_shard_dataset_is_importable():
    ShardDataset = _shard_dataset()
    assert issubclass(ShardDataset, IterableDataset)


def test_dataloader_without_workers(keyed_shards):
    batches, keys = run_dataloader(keyed_shards, 0, batch_size=16, seed=0)
    check_batches(batches, 16)
    assert_each_once(keys, ALL_KEYS)
    assert len(batches) == 13


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_two_workers_split_shards(keyed_shards, context):
    batches, keys = run_dataloader(keyed_shards, 2, context, batch_size=16, seed=0)
    check_batches(batches, 16)
    assert_each_once(keys, ALL_KEYS)


def test_dataloader_two_workers_odd_shard_count(keyed_shards):
    batches, keys = run_dataloader(keyed_shards[:5], 2, "fork", batch_size=10,
                                   shuffle=False)
    check_batches(batches, 10)
    assert_each_once(keys, ALL_KEYS[:125])


def test_dataloader_workers_and_ranks(keyed_shards):
    """2 ranks x 2 workers: 4 disjoint parts that cover everything."""
    every = []
    for rank in range(2):
        batches, keys = run_dataloader(keyed_shards, 2, "fork", batch_size=8, seed=3,
                                       rank=rank, world_size=2)
        check_batches(batches, 8)
        assert keys, f"rank {rank} got nothing"
        every.extend(keys)
    assert_each_once(every, ALL_KEYS)


def test_dataloader_same_seed_same_samples_per_epoch(keyed_shards):
    _, a = run_dataloader(keyed_shards, 0, batch_size=16, seed=5)
    _, b = run_dataloader(keyed_shards, 0, batch_size=16, seed=5)
    assert a == b


def test_workers_give_the_same_batches_in_the_same_order_as_one_loader(keyed_shards):
    """Worker k takes every num_workers-th batch of the rank from k: the
    DataLoader's round-robin puts them back in the single Loader's order."""
    reference = [list(b["__key__"]) for b in sl.Loader(keyed_shards, FIELDS,
                                                       batch_size=16, seed=4)]
    batches, _ = run_dataloader(keyed_shards, 3, "fork", batch_size=16, seed=4)
    assert [list(b["__key__"]) for b in batches] == reference
