"""Corrupt, truncated and missing shards, and bad samples: each raises the
right exception class, naming the shard (.uri), the byte offset (.offset) and,
for a bad sample, its key (.key)."""

from __future__ import annotations


import pytest

import shardloader as sl
from conftest import tar_member_offsets


def consume(loader) -> int:
    return sum(len(b["__key__"]) for b in loader)


def _ustar_checksum(header: bytes) -> bytes:
    """The checksum field of a 512-byte header (the field counted as spaces)."""
    total = sum(header[:148]) + 8 * 32 + sum(header[156:512])
    return b"%06o\x00 " % total


@pytest.fixture
def small_shard(tmp_path):
    """6 samples s000..s005 (.cls then .bin of 0..3500 bytes) in one shard,
    written by ShardWriter; returns (path, [(name, header offset, data
    offset, size)] per tarfile)."""
    path = tmp_path / "small-000.tar"
    with sl.ShardWriter(str(tmp_path / "small-%03d.tar")) as writer:
        for i in range(6):
            writer.write({"__key__": f"s{i:03d}", "cls": i, "bin": bytes([i]) * (700 * i)})
    assert writer.shards[0].path == str(path)
    members = tar_member_offsets(path)
    assert [m[0] for m in members][:4] == ["s000.cls", "s000.bin", "s001.cls", "s001.bin"]
    return path, members


FIELDS = {"cls": sl.Int("cls"), "bin": sl.Bytes("bin")}


def test_error_classes_are_builtins_too():
    assert issubclass(sl.DataLossError, OSError)
    assert issubclass(sl.NotFoundError, FileNotFoundError)
    assert issubclass(sl.FailedPreconditionError, RuntimeError)
    assert issubclass(sl.InvalidArgumentError, ValueError)
    for cls in (sl.DataLossError, sl.NotFoundError, sl.FailedPreconditionError):
        assert issubclass(cls, sl.ShardloaderError)


def test_errors_survive_pickling():
    import pickle

    error = sl.DataLossError("bad", uri="/x.tar", offset=1536, key="s001")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is sl.DataLossError
    assert (str(copy), copy.uri, copy.offset, copy.key) == ("bad", "/x.tar", 1536, "s001")


def test_missing_shard_is_not_found(small_shard, tmp_path):
    good, _ = small_shard
    missing = tmp_path / "does-not-exist-000.tar"
    with pytest.raises(sl.NotFoundError) as info:
        consume(sl.Loader([str(good), str(missing)], fields=FIELDS, batch_size=2,
                          shuffle=False))
    error = info.value
    assert isinstance(error, FileNotFoundError)
    assert error.uri == str(missing)
    assert str(missing) in str(error)


def test_missing_shard_pattern_is_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        consume(sl.Loader(str(tmp_path / "nothing-{000..003}.tar"), fields=FIELDS))
    assert isinstance(info.value, sl.NotFoundError)
    assert "nothing-000.tar" in str(info.value) or "nothing-" in (info.value.uri or "")


@pytest.mark.parametrize("where", ["in_data", "in_header"])
def test_truncated_shard_is_data_loss(small_shard, tmp_path, where):
    path, members = small_shard
    name, header, data_offset, size = next(m for m in members if m[0] == "s003.bin")
    cut = data_offset + 296 if where == "in_data" else header + 100
    truncated = tmp_path / "truncated-000.tar"
    truncated.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(str(truncated), fields=FIELDS, batch_size=2, shuffle=False))
    error = info.value
    assert isinstance(error, OSError)
    assert error.uri == str(truncated)
    assert str(truncated) in str(error)
    assert error.offset == header, f"offset {error.offset}, expected the header of {name}"
    assert str(header) in str(error)


def test_corrupt_checksum_names_the_header_offset(small_shard, tmp_path):
    path, members = small_shard
    name, header, _, _ = members[2]  # the 3rd member's header
    data = bytearray(path.read_bytes())
    data[header + 148:header + 156] = b"0000000\x00"
    corrupt = tmp_path / "corrupt-000.tar"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(str(corrupt), fields=FIELDS, batch_size=1, shuffle=False))
    error = info.value
    assert error.uri == str(corrupt)
    assert str(corrupt) in str(error)
    assert error.offset == header == 1536, name
    assert "1536" in str(error)


def test_malformed_size_field_with_valid_checksum(small_shard, tmp_path):
    """A header whose checksum is right but whose size is not octal."""
    path, members = small_shard
    _, header, _, _ = members[3]
    data = bytearray(path.read_bytes())
    block = bytearray(data[header:header + 512])
    block[124:136] = b"12z45\x00\x00\x00\x00\x00\x00\x00"
    block[148:156] = _ustar_checksum(bytes(block))
    data[header:header + 512] = block
    corrupt = tmp_path / "badsize-000.tar"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(str(corrupt), fields=FIELDS, batch_size=1, shuffle=False))
    assert info.value.uri == str(corrupt)
    assert info.value.offset == header


def test_damage_found_when_counting_raises_or_keeps_the_samples_before_it(
        small_shard, tmp_path):
    """A shard without an index file whose headers break part-way: counting
    finds the damage before the first batch. "raise" raises it there; "skip"
    uses the samples before it and lists the damage once."""
    path, members = small_shard
    _, header, _, _ = next(m for m in members if m[0] == "s004.cls")
    data = bytearray(path.read_bytes())
    data[header + 148:header + 156] = b"0000000\x00"
    corrupt = tmp_path / "late-000.tar"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(str(corrupt), fields=FIELDS, batch_size=1, shuffle=False))
    assert info.value.offset == header
    loader = sl.Loader(str(corrupt), fields=FIELDS, batch_size=1, shuffle=False,
                       on_error="skip")
    keys = [k for batch in loader for k in batch["__key__"]]
    # s003 may go too: its end is known only from the (damaged) next header.
    assert keys[:3] == ["s000", "s001", "s002"] and "s004" not in keys
    stats = loader.stats()
    assert stats.num_skipped == 1
    assert (stats.skipped[0].uri, stats.skipped[0].offset) == (str(corrupt), header)


def _write(tmp_path, samples):
    with sl.ShardWriter(str(tmp_path / "samples-%03d.tar")) as writer:
        for sample in samples:
            writer.write(sample)
    return writer.shards[0].path


def test_missing_field_names_the_sample(tmp_path):
    samples = [{"__key__": f"s{i:03d}", "cls": i, "txt": f"t{i}"} for i in range(6)]
    del samples[3]["txt"]
    shard = _write(tmp_path, samples)
    offsets = dict((name, header) for name, header, _, _ in tar_member_offsets(shard))
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(shard, fields={"text": sl.Text("txt")}, batch_size=2,
                          shuffle=False))
    error = info.value
    assert error.key == "s003"
    assert "s003" in str(error)
    assert "txt" in str(error)
    assert error.uri == shard
    assert error.offset == offsets["s003.cls"]  # where the sample starts


def test_alternative_extension_fills_a_missing_field(tmp_path):
    samples = [{"__key__": "a1", "jpg": b"J1"}, {"__key__": "a2", "png": b"P2"},
               {"__key__": "a3", "jpg": b"J3", "png": b"P3"}]
    shard = _write(tmp_path, samples)
    batch = next(iter(sl.Loader(shard, fields={"img": sl.Bytes("jpg;png")}, batch_size=3,
                                shuffle=False)))
    assert batch["img"].tolist() == [b"J1", b"P2", b"J3"]


@pytest.mark.parametrize("raw", [b"x", b"", b"1.5", b"99999999999999999999999"])
def test_bad_cls_names_the_sample(tmp_path, raw):
    samples = [{"__key__": f"s{i:03d}", "cls": i} for i in range(5)]
    samples[2]["cls"] = raw
    shard = _write(tmp_path, samples)
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(shard, fields={"label": sl.Int("cls")}, batch_size=5,
                          shuffle=False))
    assert info.value.key == "s002"
    assert "s002" in str(info.value)
    assert info.value.uri == shard


def test_good_cls_variants_parse(tmp_path):
    samples = [{"__key__": "s0", "cls": b"7"}, {"__key__": "s1", "cls": b"-3"},
               {"__key__": "s2", "cls": b"12\n"}, {"__key__": "s3", "cls": 2**40}]
    shard = _write(tmp_path, samples)
    batch = next(iter(sl.Loader(shard, fields={"label": sl.Int("cls")}, batch_size=4,
                                shuffle=False)))
    assert batch["label"].tolist() == [7, -3, 12, 2**40]


def test_closed_loader_raises_failed_precondition(keyed_shards):
    loader = sl.Loader(keyed_shards, fields={"cls": sl.Int("cls")}, batch_size=10)
    assert consume(loader) == 200
    loader.close()
    with pytest.raises(sl.FailedPreconditionError):
        consume(loader)


def test_with_statement_closes(keyed_shards):
    with sl.Loader(keyed_shards[:1], fields={"cls": sl.Int("cls")}, batch_size=5) as loader:
        assert consume(loader) == 25
    with pytest.raises(sl.FailedPreconditionError):
        consume(loader)


@pytest.mark.parametrize("kwargs", [
    {"batch_size": 0},
    {"world_size": 2, "rank": 2},
    {"rank": -1, "world_size": 1},
    {"output": "jax"},
])
def test_bad_options_are_invalid_argument(keyed_shards, kwargs):
    with pytest.raises(sl.InvalidArgumentError) as info:
        sl.Loader(keyed_shards, fields={"cls": sl.Int("cls")}, **kwargs)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("field", [
    sl.Image("jpg", size=0), sl.Image("jpg", resize="squash"),
    sl.Image("jpg", layout="whc"), sl.Npy("npy", shape=(2,), dtype="complex999"),
    sl.Bytes(""),
])
def test_bad_fields_are_invalid_argument(keyed_shards, field):
    with pytest.raises(sl.InvalidArgumentError):
        sl.Loader(keyed_shards, fields={"x": field})


@pytest.mark.parametrize("memory_map", [True, False])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_index_past_the_shard_is_data_loss_not_a_crash(small_shard, memory_map,
                                                       on_error):
    """A sample index whose member claims a size near INT64_MAX is rejected
    when loaded, before anything is read, mapped or allocated by it (it
    used to read past the mapping, or allocate and abort with pread)."""
    path, members = small_shard
    index = path.with_suffix(".idx")
    lines = index.read_text().split("\n")
    group = lines[3].split(" ")  # sample s002: cls then bin
    _, header, data_offset, _ = members[4]
    assert (group[0], int(group[1])) == ("cls", data_offset)
    group[2] = "9223372036854775000"
    lines[3] = " ".join(group)
    index.write_text("\n".join(lines))
    source = sl.SourceOptions()
    source.memory_map = memory_map
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(str(path), fields=FIELDS, batch_size=2, shuffle=False,
                          on_error=on_error, source=source))
    error = info.value
    assert (error.uri, error.offset, error.key) == (str(path), data_offset, "s002")
    assert f"{index}, line 4" in str(error)


def test_npy_field_too_large_to_allocate_is_an_error_not_an_abort(tmp_path):
    """An Npy field declared with the huge shape a .npy header claims: the
    batch cannot be allocated, which is an error (it was std::bad_alloc
    ending the process); a batch beyond any address space is rejected when
    the Loader is made."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"
    header = header.ljust(117) + "\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
    path = _write(tmp_path, [{"__key__": "k", "npy": npy + bytes(16)}])
    fields = {"x": sl.Npy("npy", shape=(10**12,), dtype="float32")}
    with pytest.raises((sl.ResourceExhaustedError, sl.DataLossError)) as info:
        consume(sl.Loader(path, fields=fields, shuffle=False))
    assert "field 'x'" in str(info.value)
    with pytest.raises(sl.InvalidArgumentError, match="more than can be allocated"):
        sl.Loader(path, fields=fields, batch_size=1000)


def test_shard_with_its_first_kilobyte_zeroed_is_data_loss_not_empty(small_shard, tmp_path):
    """Zeroing a shard's first two blocks made it read as a valid shard of 0
    samples. Without an index the shard is scanned: the members after the
    zeros are DataLoss naming the shard and the offset where they start."""
    path, members = small_shard
    data = bytearray(path.read_bytes())
    data[:1024] = bytes(1024)
    zeroed = tmp_path / "zeroed-000.tar"
    zeroed.write_bytes(bytes(data))
    first_after = next(i for i, b in enumerate(data) if b)
    with pytest.raises(sl.DataLossError) as info:
        consume(sl.Loader(str(zeroed), fields=FIELDS, batch_size=2, shuffle=False))
    assert (info.value.uri, info.value.offset) == (str(zeroed), first_after)
    assert "end-of-archive" in str(info.value)


def test_genuinely_empty_tar_archives_still_read_as_empty(tmp_path):
    """Two zero blocks, or GNU tar's padding to a 10 KiB record, are an empty
    archive."""
    import tarfile

    made = tmp_path / "gnu-000.tar"
    with tarfile.open(made, "w", format=tarfile.GNU_FORMAT):
        pass
    assert made.stat().st_size == 10240 and not any(made.read_bytes())
    two_blocks = tmp_path / "two-000.tar"
    two_blocks.write_bytes(bytes(1024))
    for path in (made, two_blocks):
        loader = sl.Loader(str(path), fields=FIELDS)
        assert loader.num_samples() == 0
        assert consume(loader) == 0
