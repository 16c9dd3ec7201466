"""Compatibility with the WebDataset convention, both ways: the `webdataset`
package reads what `pack` writes, and shardloader reads WebDataset's own
test shards."""

from __future__ import annotations

import pytest
import webdataset as wds

import shardloader as sl
from conftest import tar_samples

_META = {"__key__", "__url__", "__local_path__", "__worker__", "__rank__", "__nodeinfo__"}


def wds_samples(urls) -> dict[str, dict[str, bytes]]:
    """key -> {extension: raw bytes}, as the webdataset package reads them."""
    dataset = wds.WebDataset([str(u) for u in urls], shardshuffle=False,
                             empty_check=False)
    samples: dict[str, dict[str, bytes]] = {}
    for sample in dataset:
        key = sample["__key__"]
        assert key not in samples, f"webdataset yielded {key!r} twice"
        samples[key] = {k: v for k, v in sample.items() if not k.startswith("__")}
    return samples


def shardloader_samples(urls, extensions, batch_size=7) -> dict[str, dict[str, bytes]]:
    fields = {f"f{i}": sl.Bytes(ext) for i, ext in enumerate(extensions)}
    loader = sl.Loader([str(u) for u in urls], fields=fields, batch_size=batch_size,
                       shuffle=False)
    samples: dict[str, dict[str, bytes]] = {}
    for batch in loader:
        columns = {name: batch[name].tolist() for name in fields}
        for i, key in enumerate(batch["__key__"]):
            assert key not in samples, f"shardloader yielded {key!r} twice"
            samples[key] = {ext: columns[f"f{j}"][i] for j, ext in enumerate(extensions)}
    return samples


def test_webdataset_reads_pack_output(packed):
    samples = wds_samples(packed.shards)
    assert set(samples) == set(packed.tree.samples)
    for key, fields in packed.tree.samples.items():
        assert samples[key] == fields, key


def test_webdataset_reads_shard_writer_output(keyed_shards):
    samples = wds_samples(keyed_shards)
    assert len(samples) == 200
    for key, fields in samples.items():
        i = int(key[1:])
        assert fields == {"cls": str(i).encode(),
                          "txt": f"sample {i} \u00e9\u4e2d".encode(),
                          "bin": bytes([i % 256]) * (i % 37)}


@pytest.mark.parametrize("name, extension, count", [
    ("tendata.tar", "ten", 100),
    ("mpdata.tar", "mp", 100),
    ("compressed.tar", "txt.gz", 3),
    ("testgz.tar", "txt.gz", 1000),
])
def test_shardloader_reads_webdataset_testdata(wds_testdata_dir, name, extension, count):
    shard = wds_testdata_dir / name
    expected = wds_samples([shard])
    assert len(expected) == count
    assert all(set(fields) == {extension} for fields in expected.values())
    assert tar_samples(shard) == expected  # the two references agree
    got = shardloader_samples([shard], [extension])
    assert set(got) == set(expected)
    for key in expected:
        assert got[key] == expected[key], key


def test_shardloader_keeps_webdataset_sample_order(wds_testdata_dir):
    shard = wds_testdata_dir / "testgz.tar"
    dataset = wds.WebDataset([str(shard)], shardshuffle=False, empty_check=False)
    expected_keys = [s["__key__"] for s in dataset]
    loader = sl.Loader(str(shard), fields={"t": sl.Bytes("txt.gz")}, batch_size=64,
                       shuffle=False)
    assert [k for b in loader for k in b["__key__"]] == expected_keys


def test_cifar_shards_agree_with_webdataset(cifar_dir):
    shard = sorted((cifar_dir / "shards").glob("*.tar"))[7]
    expected = wds_samples([shard])
    got = shardloader_samples([shard], ["jpg", "cls"], batch_size=128)
    assert len(got) == 1000
    assert got == expected


def test_gzipped_tar_is_a_clear_error(wds_testdata_dir):
    """sample.tgz is a gzipped tar: shardloader reads uncompressed tars only,
    so it must fail with a DataLossError naming the shard (not crash, hang or
    yield garbage). If compressed tars become supported, it must instead
    read what webdataset reads."""
    shard = wds_testdata_dir / "sample.tgz"
    try:
        got = shardloader_samples([shard], ["png", "cls"])
    except sl.DataLossError as error:
        assert isinstance(error, OSError)
        assert error.uri == str(shard)
        assert str(shard) in str(error)
    else:
        expected = wds_samples([shard])
        assert got == expected
