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


def _pack_cli(*args, check=True):
    from conftest import shardloader_command

    result = subprocess.run([*shardloader_command(), "pack", *map(str, args)],
                            capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def _numbered_files(src, count: int, *, size: int = 1000):
    src.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (src / f"{i:04d}.bin").write_bytes(bytes([i % 256]) * size)


def test_pack_cli_creates_the_output_folder_and_its_parents(source_tree, tmp_path):
    """The README's own pack command on a fresh directory."""
    out = tmp_path / "missing" / "deeper"
    _pack_cli(source_tree.root, out / "o-%06d.tar", "--max-count", "2")
    assert sorted(out.glob("*.tar"))
    assert (out / "index.json").exists()


def test_pack_cli_summary_names_extensions_and_skipped_files(tmp_path):
    src = tmp_path / "src"
    for c in ("cat", "dog"):
        (src / c).mkdir(parents=True)
        for i in range(3):
            (src / c / f"{i}.JPEG").write_bytes(b"jpeg")
        (src / c / "0.json").write_text("{}")
    (src / "cat" / "README").write_text("no extension")
    (src / "classes.tsv").write_text("top level")
    result = _pack_cli(src, tmp_path / "out" / "t-%06d.tar")
    out = result.stdout
    assert "wrote 6 samples into 1 shard" in out, out
    assert "jpeg x6" in out and "cls x6" in out and "json x2" in out, out
    assert "skipped 2 files" in out, out
    assert "README" in out and "classes.tsv" in out, out


def test_pack_cli_quiet_prints_nothing(source_tree, tmp_path):
    result = _pack_cli(source_tree.root, tmp_path / "out" / "o-%06d.tar", "--quiet")
    assert result.stdout == "" and result.stderr == ""
    assert sorted((tmp_path / "out").glob("*.tar"))


def test_repacking_refuses_then_overwrite_reads_as_written(tmp_path, caplog):
    """The issue's trap: packing twice into one folder with a larger
    --max-size left stale shards that Loader(dir) read too."""
    src = tmp_path / "src"
    _numbered_files(src, 40)
    out = tmp_path / "out"
    _pack_cli(src, out / "t-%06d.tar", "--max-size", "8kB")
    first = sorted(p.name for p in out.glob("*.tar"))
    assert len(first) > 4
    refused = _pack_cli(src, out / "t-%06d.tar", "--max-size", "30kB", check=False)
    assert refused.returncode == 1 and "--overwrite" in refused.stderr
    assert sorted(p.name for p in out.glob("*.tar")) == first
    _pack_cli(src, out / "t-%06d.tar", "--max-size", "30kB", "--overwrite")
    second = sorted(p.name for p in out.glob("*.tar"))
    assert 1 < len(second) < len(first)
    assert sorted(p.name for p in out.glob("*.idx")) == [n[:-4] + ".idx" for n in second]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    for spec in (out, out / "index.json"):
        loader = sl.Loader(str(spec), fields={"b": sl.Bytes("bin")}, batch_size=8,
                           shuffle=False)
        keys = [k for b in loader for k in b["__key__"]]
        assert sorted(keys) == [f"{i:04d}" for i in range(40)], spec


def test_loader_reads_the_shards_index_json_lists_and_warns_about_others(tmp_path, caplog):
    """Shards left beside a packed dataset (by hand, or an older tool) are
    not read, and the loader says so."""
    from shardloader.cli.pack import pack

    src = tmp_path / "src"
    _numbered_files(src, 10)
    out = tmp_path / "out"
    pack(str(src), str(out / "t-%06d.tar"), max_count=4, progress=False)
    with sl.ShardWriter(str(out / "stale-%06d.tar"),
                        index_path=str(tmp_path / "stale.json")) as writer:
        writer.write({"__key__": "stale", "bin": b"old"})
    with caplog.at_level("WARNING", logger="shardloader"):
        loader = sl.Loader(str(out), fields={"b": sl.Bytes("bin")}, batch_size=4,
                           shuffle=False)
    assert [os.path.basename(s) for s in loader.shards] == [
        "t-000000.tar", "t-000001.tar", "t-000002.tar"]
    assert sum(len(b["__key__"]) for b in loader) == 10
    warned = [r.getMessage() for r in caplog.records if r.name == "shardloader"]
    assert any("1 other .tar file" in m for m in warned), warned
    direct = sl.Loader(str(out / "index.json"), fields={"b": sl.Bytes("bin")},
                       batch_size=4, shuffle=False)
    assert direct.shards == loader.shards


def test_overwrite_keeps_the_old_set_when_the_new_one_fails(tmp_path, monkeypatch):
    from shardloader.cli import pack as pack_module

    src = tmp_path / "src"
    _numbered_files(src, 20)
    out = tmp_path / "out"
    pack_module.pack(str(src), str(out / "t-%06d.tar"), max_count=5, progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    calls = []

    def failing_read(sample):
        calls.append(sample)
        if len(calls) > 12:
            raise OSError(f"cannot read {sample.key}")
        return real_read(sample)

    real_read = pack_module._read
    monkeypatch.setattr(pack_module, "_read", failing_read)
    with pytest.raises(OSError):
        pack_module.pack(str(src), str(out / "t-%06d.tar"), max_count=3, progress=False,
                         overwrite=True, num_threads=1)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


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
