"""pack -> load round trip: `shardloader pack`, pack(), ShardWriter, index.json,
GNU tar."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest

import shardloader as sl
from conftest import PACK_MAX_COUNT, SOURCE_EXTENSIONS, tar_samples


def _load_all(packed) -> dict[str, dict[str, bytes]]:
    fields = {ext.replace(".", "_"): sl.Bytes(ext) for ext in SOURCE_EXTENSIONS}
    fields["cls"] = sl.Bytes("cls")
    loader = sl.Loader(packed.shards, fields=fields, batch_size=3, shuffle=False)
    loaded: dict[str, dict[str, bytes]] = {}
    for batch in loader:
        columns = {name: batch[name].tolist() for name in fields}
        for i, key in enumerate(batch["__key__"]):
            assert key not in loaded, f"key {key!r} read twice"
            loaded[key] = {ext: columns[ext.replace(".", "_")][i]
                           for ext in (*SOURCE_EXTENSIONS, "cls")}
    return loaded


def test_round_trip_is_byte_exact(packed):
    loaded = _load_all(packed)
    assert set(loaded) == set(packed.tree.samples)
    for key, fields in packed.tree.samples.items():
        for ext, data in fields.items():
            assert loaded[key][ext] == data, f"{key}.{ext} differs after pack -> load"


def test_default_pack_order_is_a_seeded_shuffle(tmp_path):
    """By default pack mixes samples (so shards mix classes), reproducibly."""
    from shardloader.cli.pack import pack

    src = tmp_path / "src"
    for c in range(3):
        (src / f"class{c}").mkdir(parents=True)
        for i in range(10):
            (src / f"class{c}" / f"{i:02d}.bin").write_bytes(bytes([c, i]))
    orders = []
    for run, seed in enumerate([0, 0, 1]):
        out = tmp_path / f"out{run}"
        out.mkdir()
        writer = pack(str(src), str(out / "s-%02d.tar"), max_count=100, seed=seed,
                      progress=False)
        loader = sl.Loader(writer.shards[0].path, fields={"b": sl.Bytes("bin")},
                           batch_size=30, shuffle=False)
        orders.append([k for b in loader for k in b["__key__"]])
    keys = sorted(orders[0])
    assert len(keys) == 30 and orders[0] != keys
    assert orders[0] == orders[1]
    assert orders[0] != orders[2] and sorted(orders[2]) == keys


def test_round_trip_with_shard_order_and_sorted_keys(packed):
    """shuffle=False reads shards in order; pack --no-shuffle writes keys in
    sorted order."""
    loader = sl.Loader(packed.shards, fields={"cls": sl.Int("cls")}, batch_size=2,
                       shuffle=False)
    keys = [k for b in loader for k in b["__key__"]]
    assert keys == sorted(packed.tree.samples)


def test_labels_are_sorted_class_order(packed):
    loader = sl.Loader(packed.shards, fields={"label": sl.Int("cls")}, batch_size=4,
                       shuffle=False)
    seen = 0
    for batch in loader:
        for key, label in zip(batch["__key__"], batch["label"].tolist()):
            top_folder = key.split("/")[0]
            assert label == packed.tree.classes.index(top_folder), key
            seen += 1
    assert seen == len(packed.tree.samples)


def test_shard_count_follows_max_count(packed):
    expected = -(-len(packed.tree.samples) // PACK_MAX_COUNT)
    assert len(packed.shards) == expected
    for shard in packed.shards:
        assert 1 <= len(tar_samples(shard)) <= PACK_MAX_COUNT


def test_index_json(packed):
    assert packed.index_path.exists()
    index = json.loads(packed.index_path.read_text())
    entries = index["shards"]
    names = [entry.get("url", entry.get("path")) for entry in entries]
    assert all(names), f"index entries without a url/path: {entries}"
    assert sorted(os.path.basename(n) for n in names) == \
        [os.path.basename(s) for s in packed.shards]
    total = 0
    for entry, name in zip(entries, names):
        path = packed.out_dir / os.path.basename(name)
        data = path.read_bytes()
        assert entry["size_bytes"] == len(data), name
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), name
        assert entry["num_samples"] == len(tar_samples(path)), name
        total += entry["num_samples"]
    assert total == len(packed.tree.samples)
    assert index["num_samples"] == total


def test_gnu_tar_lists_every_member(packed):
    listed = set()
    for shard in packed.shards:
        result = subprocess.run(["tar", "-tf", shard], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stderr == "", f"GNU tar warned about {shard}: {result.stderr}"
        names = result.stdout.splitlines()
        assert len(names) == len(set(names)), f"duplicate members in {shard}"
        listed.update(names)
    assert listed == packed.tree.members()


def test_gnu_tar_extracts_the_same_bytes(packed, tmp_path):
    for shard in packed.shards:
        result = subprocess.run(["tar", "-xf", shard, "-C", str(tmp_path)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
    for key, fields in packed.tree.samples.items():
        for ext, data in fields.items():
            assert (tmp_path / f"{key}.{ext}").read_bytes() == data, f"{key}.{ext}"


def test_no_temporary_files_remain(packed):
    left = sorted(os.listdir(packed.out_dir))
    shards = [os.path.basename(s) for s in packed.shards]
    indexes = [s[:-len(".tar")] + ".idx" for s in shards]  # sample indexes
    assert left == sorted(shards + indexes + ["index.json"])


def test_cli_and_function_write_identical_shards(source_tree, tmp_path):
    """Packing is reproducible: the command and the function give the same bytes."""
    from conftest import pack_with_cli, pack_with_function

    by_cli = pack_with_cli(source_tree, tmp_path / "cli")
    by_function = pack_with_function(source_tree, tmp_path / "function")
    assert len(by_cli.shards) == len(by_function.shards)
    for a, b in zip(by_cli.shards, by_function.shards):
        assert os.path.basename(a) == os.path.basename(b)
        with open(a, "rb") as fa, open(b, "rb") as fb:
            assert fa.read() == fb.read(), os.path.basename(a)


def test_pack_missing_source_is_not_found(tmp_path):
    from shardloader.cli.pack import pack

    with pytest.raises(sl.NotFoundError) as info:
        pack(str(tmp_path / "nope"), str(tmp_path / "o-%06d.tar"), progress=False)
    assert isinstance(info.value, FileNotFoundError)
    assert str(tmp_path / "nope") in str(info.value)


def test_pack_cli_missing_output_dir_fails_cleanly(source_tree, tmp_path):
    from conftest import shardloader_command

    result = subprocess.run(
        [*shardloader_command(), "pack", str(source_tree.root),
         str(tmp_path / "missing" / "o-%06d.tar")],
        capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "does not exist" in result.stderr or "not found" in result.stderr.lower()
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("pattern, first", [("w-%06d.tar", 10), ("w-{000010..}.tar", 0)])
def test_shard_writer_round_trip_numbering_and_info(tmp_path, pattern, first):
    samples = [{"__key__": f"s{i:03d}", "cls": i, "txt": f"t{i}", "bin": bytes([i]) * i}
               for i in range(7)]
    with sl.ShardWriter(str(tmp_path / pattern), max_count=3,
                        first_shard_index=first) as writer:
        for sample in samples:
            writer.write({**sample, "__ignored__": "x"})
    names = [os.path.basename(s.path) for s in writer.shards]
    assert names == ["w-000010.tar", "w-000011.tar", "w-000012.tar"]
    assert [s.num_samples for s in writer.shards] == [3, 3, 1]
    for info in writer.shards:
        data = open(info.path, "rb").read()
        assert info.size_bytes == len(data)
        assert info.sha256 == hashlib.sha256(data).hexdigest()
    read = {}
    for info in writer.shards:
        read.update(tar_samples(info.path))
    assert set(read) == {s["__key__"] for s in samples}
    for sample in samples:
        got = read[sample["__key__"]]
        assert set(got) == {"cls", "txt", "bin"}, "fields starting with __ must not be written"
        assert got["cls"] == str(sample["cls"]).encode()
        assert got["txt"] == sample["txt"].encode()
        assert got["bin"] == sample["bin"]
    indexes = [n[:-len(".tar")] + ".idx" for n in names]
    assert sorted(os.listdir(tmp_path)) == sorted(names + indexes + ["index.json"])


def test_shard_writer_accepts_long_keys(tmp_path):
    """Keys of realistic length (and a path beyond ustar's 100-byte name
    field) are valid WebDataset keys."""
    keys = ["airplane_0000", "n01440764_10026", "train/cat/cat_000123",
            "a/" + "b" * 80 + "/" + "c" * 60]
    with sl.ShardWriter(str(tmp_path / "long-%03d.tar")) as writer:
        for i, key in enumerate(keys):
            writer.write({"__key__": key, "jpg": bytes([i]) * 10, "cls": i})
    read = tar_samples(writer.shards[0].path)
    assert set(read) == set(keys)
    loader = sl.Loader(writer.shards[0].path, fields={"cls": sl.Int("cls")},
                       batch_size=10, shuffle=False)
    batch = next(iter(loader))
    assert batch["__key__"] == keys
    assert batch["cls"].tolist() == list(range(len(keys)))


def test_shard_writer_removes_unfinished_shard_on_exception(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with sl.ShardWriter(str(tmp_path / "x-%03d.tar"), max_count=2) as writer:
            for i in range(5):
                writer.write({"__key__": f"k{i}", "cls": i})
            raise RuntimeError("boom")
    # `writer` is still referenced here, as it would be in user code.
    left = sorted(os.listdir(tmp_path))
    assert not [n for n in left if "partial" in n or n.startswith(".")], \
        f"unfinished shard left behind after an exception: {left}"
    assert "x-002.tar" not in left
    assert writer is not None


def test_shard_writer_rejects_bad_samples(tmp_path):
    with sl.ShardWriter(str(tmp_path / "bad-%03d.tar")) as writer:
        with pytest.raises(sl.InvalidArgumentError):
            writer.write({"__key__": "k1"})  # no fields
        with pytest.raises(sl.InvalidArgumentError):
            writer.write({"__key__": "k.1", "cls": 1})  # a dot in the key's name
        with pytest.raises(TypeError):
            writer.write({"__key__": "k2", "obj": object()})
        writer.write({"__key__": "k3", "cls": 3})
    assert list(tar_samples(writer.shards[0].path)) == ["k3"]


def test_names_with_spaces_and_newlines_pack_index_and_load(tmp_path):
    """An ImageFolder whose class and file names hold spaces (or a newline)
    packs into shards whose index the Loader reads; `shardloader index`
    writes the same index for the shard."""
    from conftest import shardloader_command
    from shardloader.cli.pack import pack

    src = tmp_path / "src"
    files = {"a b/c d.jpg": b"first", "a b/e\nf.jpg": b"second",
             "plain/g.jpg": b"third"}
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    writer = pack(str(src), str(out / "s-%02d.tar"), progress=False)
    shard = writer.shards[0].path
    index = out / "s-00.idx"
    loader = sl.Loader(shard, fields={"jpg": sl.Bytes("jpg")}, batch_size=3,
                       shuffle=False)
    loaded = {key: data for batch in loader
              for key, data in zip(batch["__key__"], batch["jpg"].tolist())}
    assert loaded == {name[:-len(".jpg")]: data for name, data in files.items()}
    assert "a\\x20b/c\\x20d.jpg" in index.read_text()
    written = index.read_bytes()
    index.unlink()
    subprocess.run([*shardloader_command(), "index", shard], check=True,
                   capture_output=True, timeout=60)
    assert index.read_bytes() == written
