"""`shardloader inspect SHARD...`: lists samples, validates, exit status."""

from __future__ import annotations

import subprocess

import pytest

import shardloader as sl
from conftest import shardloader_command, tar_member_offsets


def inspect(*args):
    return subprocess.run([*shardloader_command(), "inspect", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def shard(tmp_path):
    with sl.ShardWriter(str(tmp_path / "good-%03d.tar")) as writer:
        for i in range(12):
            writer.write({"__key__": f"s{i:03d}", "cls": i, "bin": b"\x01" * (100 * i)})
    return writer.shards[0].path


def test_good_shard(shard):
    result = inspect(shard, "--limit", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    offsets = {name: header for name, header, _, _ in tar_member_offsets(shard)}
    lines = out.splitlines()
    for key in ("s000", "s001", "s002"):
        line = next((l for l in lines if f" {key} " in f"{l} "), None)
        assert line is not None, f"{key} not listed:\n{out}"
        assert str(offsets[f"{key}.cls"]) in line.split(), line
    assert " s003 " not in out  # --limit 3
    assert "12 samples" in out
    assert "valid" in out
    assert shard in out


def test_default_limit_lists_ten(shard):
    result = inspect(shard)
    assert result.returncode == 0
    assert " s009" in result.stdout and " s010 " not in result.stdout
    assert "2 more" in result.stdout


def test_peer_written_shard(cifar_dir):
    path = sorted((cifar_dir / "shards").glob("*.tar"))[0]
    result = inspect(path, "--limit", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "airplane_0000" in result.stdout
    assert "1000 samples" in result.stdout


def test_corrupt_shard_reports_the_offset(shard, tmp_path):
    members = tar_member_offsets(shard)
    name, header, _, _ = members[5]
    data = bytearray(open(shard, "rb").read())
    data[header + 148:header + 156] = b"0000000\x00"
    corrupt = tmp_path / "corrupt-000.tar"
    corrupt.write_bytes(bytes(data))
    result = inspect(corrupt)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"offset {header}" in output, output
    assert str(corrupt) in output
    assert "Traceback" not in output


def test_truncated_shard_fails(shard, tmp_path):
    data = open(shard, "rb").read()
    truncated = tmp_path / "truncated-000.tar"
    truncated.write_bytes(data[:len(data) // 2 + 100])
    result = inspect(truncated)
    assert result.returncode != 0
    assert "offset" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_one_bad_shard_fails_the_run_but_the_rest_is_inspected(shard, tmp_path):
    missing = tmp_path / "missing-000.tar"
    result = inspect(missing, shard)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert str(missing) in output
    assert "Traceback" not in result.stderr, result.stderr
    assert "12 samples" in result.stdout, "the good shard after the missing one was not inspected"


def test_takes_the_shard_specs_loader_takes(tmp_path):
    """Brace patterns, folders and lists, resolved as Loader resolves them."""
    with sl.ShardWriter(str(tmp_path / "b-%03d.tar"), max_count=2) as writer:
        for i in range(5):
            writer.write({"__key__": f"k{i}", "cls": i})
    for spec in ([str(tmp_path / "b-{000..002}.tar")], [str(tmp_path)],
                 [str(tmp_path / "b-000.tar::") + str(tmp_path / "b-{001..002}.tar")]):
        result = inspect(*spec)
        assert result.returncode == 0, result.stdout + result.stderr
        for name in ("b-000.tar", "b-001.tar", "b-002.tar"):
            assert f"{tmp_path / name}: " in result.stdout, (spec, result.stdout)
