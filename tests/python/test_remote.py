"""Remote shards: HTTP and HTTPS/HTTP/2 (nginx), S3 (moto, signatures
checked), faults, cache.

Every server runs on 127.0.0.1, started here (remote_servers.py). The shared
suite (``SOURCES``) runs the same checks on a local directory, nginx over
HTTP/1.1, nginx over HTTPS with HTTP/2 (self-signed certificate, trusted
through ``ca_bundle``) and the S3 server; the fault tests put FaultProxy
between shardloader and a server.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import shardloader as sl
from shardloader import _core
from remote_servers import FaultProxy, MotoS3, Nginx, self_signed_certificate

NUM_SHARDS = 3
BUCKET = "shards"


def write_shards(directory: Path) -> list[Path]:
    """Three real shards (ShardWriter) of ~1.5 MB: 60 samples of 1-40 KiB."""
    rng = random.Random(7)
    directory.mkdir(parents=True, exist_ok=True)
    with sl.ShardWriter(str(directory / "train-%06d.tar"), max_count=60) as writer:
        for i in range(60 * NUM_SHARDS):
            writer.write({"__key__": f"sample{i:05d}", "cls": i % 10,
                          "bin": rng.randbytes(rng.randint(1024, 40 << 10))})
    return sorted(directory.glob("train-*.tar"))


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("remote")
    os.chmod(root, 0o755)  # nginx workers may run as another user
    write_shards(root / "data")
    return root / "data"


@pytest.fixture(scope="module")
def nginx(shard_dir, tmp_path_factory):
    server = Nginx(shard_dir, tmp_path_factory.mktemp("nginx"))
    yield server
    server.close()


@pytest.fixture(scope="module")
def nginx_https(shard_dir, tmp_path_factory):
    """nginx over HTTPS with HTTP/2, under a self-signed certificate."""
    server = Nginx(shard_dir, tmp_path_factory.mktemp("nginx-https"), tls=True)
    yield server
    server.close()


@pytest.fixture(scope="module")
def moto(shard_dir):
    server = MotoS3()
    server.s3.create_bucket(Bucket=BUCKET)
    for path in sorted(shard_dir.glob("*.tar")):
        server.s3.put_object(Bucket=BUCKET, Key=f"train/{path.name}", Body=path.read_bytes())
    server.check_signatures()
    yield server
    server.close()


@pytest.fixture
def aws_env(moto, monkeypatch):
    """The S3 server's key in the environment, as a user would set it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto.secret_key)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    return moto


def options(**fields) -> _core.SourceOptions:
    """Small parts so each shard is several ranged GETs; quick retries."""
    o = _core.SourceOptions()
    o.part_size_bytes = 256 << 10
    o.max_concurrency = 4
    o.initial_backoff_s = 0.01
    o.max_backoff_s = 0.05
    for name, value in fields.items():
        setattr(o, name, value)
    return o


SOURCES = ["local", "http", "https", "s3"]


@pytest.fixture(params=SOURCES)
def source(request, shard_dir):
    """(list of shard URIs, SourceOptions, local paths) for each backend."""
    names = sorted(p.name for p in shard_dir.glob("*.tar"))
    local = [shard_dir / n for n in names]
    if request.param == "local":
        return [str(p) for p in local], options(), local
    if request.param == "http":
        server = request.getfixturevalue("nginx")
        return [f"{server.url}/{n}" for n in names], options(), local
    if request.param == "https":
        server = request.getfixturevalue("nginx_https")
        return ([f"{server.url}/{n}" for n in names],
                options(ca_bundle=str(server.ca_bundle)), local)
    server = request.getfixturevalue("aws_env")
    return ([f"s3://{BUCKET}/train/{n}" for n in names],
            options(endpoint_url=server.url), local)


def missing_uri(uri: str) -> str:
    return uri.rsplit("/", 1)[0] + "/no-such-shard.tar"


def loader_batches(monkeypatch, uris, source_options):
    """One epoch through sl.Loader reading `uris` with `source_options`."""
    loader = sl.Loader(uris, fields={"cls": sl.Int("cls"), "bin": sl.Bytes("bin")},
                       batch_size=16, shuffle=True, seed=3, output="numpy",
                       rank=0, world_size=1, source=source_options)
    out = [(list(b["__key__"]), b["cls"].copy(), b["bin"].values.copy(),
            b["bin"].offsets.copy()) for b in loader]
    loader.close()
    return out


def assert_same(a, b):
    assert len(a) == len(b) and len(a) > 0
    for x, y in zip(a, b):
        assert x[0] == y[0]
        for u, v in zip(x[1:], y[1:]):
            np.testing.assert_array_equal(u, v)


# ---------------------------------------------------------------------------
# The shared suite: every source must pass it.

def test_stream_returns_every_byte(source):
    uris, o, local = source
    for uri, path in zip(uris, local):
        assert _core.read_stream(uri, o) == path.read_bytes()


def test_concurrent_random_reads_match_the_file(source):
    uris, o, local = source
    data = local[0].read_bytes()
    reader = _core.open_random_access(uris[0], o)
    assert reader.size == len(data) and reader.uri == uris[0]
    rng = random.Random(1)
    ranges = [(off, rng.randint(1, 300_000)) for off in
              (rng.randrange(len(data) - 300_000) for _ in range(64))]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda r: reader.read_at(*r), ranges))
    assert got == [data[off:off + n] for off, n in ranges]


def test_read_past_the_end_is_data_loss(source):
    uris, o, _ = source
    reader = _core.open_random_access(uris[0], o)
    with pytest.raises(sl.DataLossError):
        reader.read_at(reader.size - 10, 20)


def test_missing_shard_is_not_found(source):
    uris, o, _ = source
    with pytest.raises(sl.NotFoundError) as info:
        _core.open_random_access(missing_uri(uris[0]), o)
    assert info.value.uri == missing_uri(uris[0])
    with pytest.raises(FileNotFoundError):
        _core.read_stream(missing_uri(uris[0]), o)


def test_loader_batches_match_a_local_run(source, shard_dir, monkeypatch):
    uris, o, local = source
    expected = loader_batches(monkeypatch, [str(p) for p in local], options())
    assert_same(loader_batches(monkeypatch, uris, o), expected)


def test_loader_through_the_cache_matches_a_local_run(source, tmp_path, monkeypatch):
    uris, o, local = source
    expected = loader_batches(monkeypatch, [str(p) for p in local], options())
    o.cache_dir = str(tmp_path / "cache")
    assert_same(loader_batches(monkeypatch, uris, o), expected)
    assert_same(loader_batches(monkeypatch, uris, o), expected)  # second epoch: from cache


# ---------------------------------------------------------------------------
# HTTPS: HTTP/2, certificate verification

def test_https_reads_use_http2_and_plain_http_uses_http11(nginx_https, nginx, shard_dir):
    name = "train-000002.tar"
    expected = (shard_dir / name).read_bytes()
    logged = len(nginx_https.requests())
    o = options(ca_bundle=str(nginx_https.ca_bundle))
    assert _core.read_stream(f"{nginx_https.url}/{name}", o) == expected
    new = nginx_https.requests()[logged:]
    # One HEAD, then ranged GETs of 256 KiB parts (206 Partial Content).
    assert [(m, p, status) for m, p, _, status in new if m == "HEAD"] == [("HEAD", f"/{name}", 200)]
    gets = [entry for entry in new if entry[0] == "GET"]
    assert len(gets) >= len(expected) // (256 << 10)
    assert all(path == f"/{name}" and status == 206 for _, path, _, status in gets)
    assert {protocol for _, _, protocol, _ in new} == {"HTTP/2.0"}
    # The same client over plain http:// speaks HTTP/1.1 (no TLS, no ALPN).
    logged = len(nginx.requests())
    assert _core.read_stream(f"{nginx.url}/{name}", options()) == expected
    assert {protocol for _, _, protocol, _ in nginx.requests()[logged:]} == {"HTTP/1.1"}


def test_https_loader_over_http2_matches_a_local_run(nginx_https, shard_dir, monkeypatch):
    names = sorted(p.name for p in shard_dir.glob("train-*.tar"))
    expected = loader_batches(monkeypatch, [str(shard_dir / n) for n in names], options())
    logged = len(nginx_https.requests())
    got = loader_batches(monkeypatch, [f"{nginx_https.url}/{n}" for n in names],
                         options(ca_bundle=str(nginx_https.ca_bundle)))
    assert_same(got, expected)
    new = nginx_https.requests()[logged:]
    assert {path for _, path, _, _ in new} >= {f"/{n}" for n in names}
    assert {protocol for _, _, protocol, _ in new} == {"HTTP/2.0"}


def test_https_self_signed_server_without_ca_bundle_is_refused(nginx_https):
    uri = f"{nginx_https.url}/train-000000.tar"
    logged = len(nginx_https.requests())
    with pytest.raises(sl.PermissionDeniedError) as info:  # not retried, not Unavailable
        _core.open_random_access(uri, options())
    assert isinstance(info.value, PermissionError)
    assert info.value.uri == uri
    message = str(info.value)
    assert "certificate" in message and "ca_bundle" in message
    assert "gave up after" not in message
    assert len(nginx_https.requests()) == logged  # no request got past the handshake


def test_https_certificate_of_another_ca_is_refused(nginx_https, tmp_path):
    # ca_bundle replaces the trust store; it never turns verification off.
    other_ca, _ = self_signed_certificate(tmp_path)
    with pytest.raises(sl.PermissionDeniedError, match="certificate"):
        _core.read_stream(f"{nginx_https.url}/train-000000.tar",
                          options(ca_bundle=str(other_ca)))


def test_https_unreadable_ca_bundle_is_invalid_argument(nginx_https, tmp_path):
    missing = tmp_path / "no-such-ca.pem"
    with pytest.raises(sl.InvalidArgumentError, match="ca_bundle"):
        _core.open_random_access(f"{nginx_https.url}/train-000000.tar",
                                 options(ca_bundle=str(missing)))


def test_ca_bundle_round_trips_and_shows_in_repr():
    o = _core.SourceOptions()
    assert o.ca_bundle == ""
    o.ca_bundle = "/etc/ssl/private-ca.pem"
    assert o.ca_bundle == "/etc/ssl/private-ca.pem"
    assert "ca_bundle='/etc/ssl/private-ca.pem'" in repr(o)


# ---------------------------------------------------------------------------
# S3 specifics

def test_s3_lists_a_prefix_across_pages(moto, aws_env):
    # ListObjectsV2 returns 1000 keys per page; 1003 objects need two.
    moto.check_signatures(False)  # moto cannot check signed listings (boto3's fail too)
    try:
        for i in range(1003):
            moto.s3.put_object(Bucket="many", Key=f"p/{i:05d}.tar", Body=b"x") if i else (
                moto.s3.create_bucket(Bucket="many"),
                moto.s3.put_object(Bucket="many", Key="p/00000.tar", Body=b"x"))
        listed = _core.list_prefix("s3://many/p/", options(endpoint_url=moto.url))
    finally:
        moto.check_signatures(True)
    assert listed == [f"s3://many/p/{i:05d}.tar" for i in range(1003)]


def test_s3_wrong_secret_is_permission_denied_at_once(moto, aws_env, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-123")
    proxy = FaultProxy(moto.url)
    try:
        with pytest.raises(sl.PermissionDeniedError) as info:
            _core.open_random_access(f"s3://{BUCKET}/train/train-000000.tar",
                                     options(endpoint_url=proxy.url))
        assert len(proxy.log) == 1  # not retried
    finally:
        proxy.close()
    assert "not-the-secret-123" not in str(info.value)
    assert moto.access_key not in str(info.value)


def test_s3_unknown_key_id_is_permission_denied(moto, aws_env, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWNKEY000000")
    with pytest.raises(PermissionError):
        _core.read_stream(f"s3://{BUCKET}/train/train-000000.tar", options(endpoint_url=moto.url))


def test_s3_anonymous_read_of_a_private_bucket_is_refused(moto, aws_env):
    with pytest.raises(sl.PermissionDeniedError):
        _core.open_random_access(f"s3://{BUCKET}/train/train-000000.tar",
                                 options(endpoint_url=moto.url, anonymous=True))


def test_s3_credentials_from_a_profile_in_the_shared_file(moto, shard_dir, tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    credentials = tmp_path / "credentials"
    credentials.write_text(f"[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"
                           f"[training]\naws_access_key_id = {moto.access_key}\n"
                           f"aws_secret_access_key = {moto.secret_key}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)  # endpoint from the environment
    uri = f"s3://{BUCKET}/train/train-000001.tar"
    expected = (shard_dir / "train-000001.tar").read_bytes()
    assert _core.read_stream(uri, options(profile="training")) == expected
    monkeypatch.setenv("AWS_PROFILE", "training")
    assert _core.read_stream(uri, options()) == expected
    monkeypatch.delenv("AWS_PROFILE")
    with pytest.raises(sl.PermissionDeniedError):  # [default] holds a wrong key
        _core.read_stream(uri, options())
    with pytest.raises(sl.NotFoundError):
        _core.read_stream(uri, options(profile="no-such-profile"))


def test_repr_shows_no_secret(aws_env):
    text = repr(options(endpoint_url=aws_env.url))
    assert "SourceOptions(" in text and aws_env.secret_key not in text


# ---------------------------------------------------------------------------
# Faults between shardloader and the server

@pytest.fixture
def proxy(nginx):
    server = FaultProxy(nginx.url, stall_s=3.0)
    yield server
    server.close()


@pytest.mark.parametrize("faults", [["drop"] * 3, ["500", "503", "429"], ["drop", "500", "drop"]])
def test_faults_mid_read_are_survived(proxy, shard_dir, faults, monkeypatch):
    names = sorted(p.name for p in shard_dir.glob("*.tar"))
    expected = loader_batches(monkeypatch, [str(shard_dir / n) for n in names], options())
    # The first requests are the HEADs; put the faults on ranged GETs.
    uris = [f"{proxy.url}/{n}" for n in names]
    readers = [_core.open_random_access(u, options()) for u in uris]
    proxy.faults.extend(faults)
    data = (shard_dir / names[0]).read_bytes()
    assert readers[0].read_at(0, len(data)) == data
    assert not proxy.faults
    proxy.faults.extend(["ok", "ok", "ok"] + faults * 3)
    assert_same(loader_batches(monkeypatch, uris, options()), expected)


def test_a_dropped_connection_resumes_at_the_byte_where_it_broke(proxy, shard_dir):
    uri = f"{proxy.url}/{shard_dir.glob('*.tar').__next__().name}"
    path = shard_dir / uri.rsplit("/", 1)[1]
    reader = _core.open_random_access(uri, options())
    proxy.faults.append("drop")
    assert reader.read_at(1000, 200_000) == path.read_bytes()[1000:201_000]
    ranges = [entry[2] for entry in proxy.requests("GET")]
    assert ranges == ["bytes=1000-200999", "bytes=101000-200999"]  # second half only


def test_a_stalled_transfer_times_out_and_is_retried(proxy, shard_dir):
    name = sorted(p.name for p in shard_dir.glob("*.tar"))[0]
    reader = _core.open_random_access(f"{proxy.url}/{name}",
                                      options(low_speed_time_s=1, low_speed_bytes_per_s=1 << 20))
    proxy.faults.append("stall")
    assert reader.read_at(0, 100_000) == (shard_dir / name).read_bytes()[:100_000]
    assert [e[3] for e in proxy.requests("GET")] == ["stall", "ok"]


def test_retries_exhausted_is_unavailable(proxy, shard_dir):
    name = sorted(p.name for p in shard_dir.glob("*.tar"))[0]
    reader = _core.open_random_access(f"{proxy.url}/{name}", options(max_attempts=3))
    proxy.faults.extend(["503"] * 5)
    with pytest.raises(sl.UnavailableError) as info:
        reader.read_at(0, 1000)
    assert isinstance(info.value, ConnectionError)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(proxy.requests("GET")) == 3


def test_a_shard_that_changes_mid_read_is_data_loss(nginx, shard_dir):
    path = shard_dir / "changing.tar"
    path.write_bytes(os.urandom(500_000))
    try:
        reader = _core.open_random_access(f"{nginx.url}/changing.tar", options())
        reader.read_at(0, 1000)
        os.utime(path, (1, 1))  # new version: nginx's ETag changes
        with pytest.raises(sl.DataLossError):
            reader.read_at(1000, 1000)
    finally:
        path.unlink()


def test_a_refused_index_probe_falls_back_to_scanning(proxy, shard_dir, monkeypatch):
    """The .idx beside a remote shard is optional: a 403 for it (S3's answer
    for a missing key without ListBucket) scans the shard instead of failing
    the Loader. The probe keeps the shard URL's query (a presigned URL's
    token): "a.tar?X=1" is probed as "a.idx?X=1"."""
    names = sorted(p.name for p in shard_dir.glob("*.tar"))
    expected = loader_batches(monkeypatch, [str(shard_dir / n) for n in names], options())
    proxy.forbidden = (".idx",)
    uris = [f"{proxy.url}/{n}?X=1" for n in names]
    assert_same(loader_batches(monkeypatch, uris, options()), expected)
    probes = {path for _, path, _, fault in proxy.log if fault == "403"}
    assert probes == {f"/{n.removesuffix('.tar')}.idx?X=1" for n in names}


def test_connection_refused_is_unavailable():
    with pytest.raises(sl.UnavailableError):
        _core.open_random_access("http://127.0.0.1:9/x.tar", options(max_attempts=2))


# ---------------------------------------------------------------------------
# The local cache

def cached_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.shard"))


def test_cache_reuses_shards_without_the_network(proxy, shard_dir, tmp_path):
    names = sorted(p.name for p in shard_dir.glob("*.tar"))
    o = options(cache_dir=str(tmp_path / "cache"))
    for name in names:
        assert _core.read_stream(f"{proxy.url}/{name}", o) == (shard_dir / name).read_bytes()
    fetched = proxy.body_bytes
    assert fetched == sum((shard_dir / n).stat().st_size for n in names)
    for name in names:
        reader = _core.open_random_access(f"{proxy.url}/{name}", o)
        assert reader.read_at(0, 512) == (shard_dir / name).read_bytes()[:512]
    assert proxy.body_bytes == fetched  # only HEADs went out
    assert len(cached_files(tmp_path / "cache")) == len(names)


def test_prefetch_fills_the_cache_in_the_background(nginx, shard_dir, tmp_path):
    names = sorted(p.name for p in shard_dir.glob("*.tar"))
    o = options(cache_dir=str(tmp_path / "cache"))
    for name in names:
        _core.prefetch_shard(f"{nginx.url}/{name}", o)
    for name in names:  # waits for the running fetch instead of repeating it
        reader = _core.open_random_access(f"{nginx.url}/{name}", o)
        assert reader.read_at(0, reader.size) == (shard_dir / name).read_bytes()
    assert len(cached_files(tmp_path / "cache")) == len(names)


def test_a_truncated_or_corrupt_cache_file_is_refetched(nginx, shard_dir, tmp_path):
    name = sorted(p.name for p in shard_dir.glob("*.tar"))[0]
    uri, cache = f"{nginx.url}/{name}", tmp_path / "cache"
    data = (shard_dir / name).read_bytes()
    assert _core.read_stream(uri, options(cache_dir=str(cache))) == data
    [entry] = cached_files(cache)
    entry.write_bytes(data[: len(data) // 2])  # partial
    assert _core.read_stream(uri, options(cache_dir=str(cache))) == data
    # Same size, one byte flipped: found by the SHA-256 a new process checks.
    corrupt = bytearray(data)
    corrupt[len(data) // 3] ^= 0xFF
    entry.write_bytes(bytes(corrupt))
    script = ("import sys; from shardloader import _core; o = _core.SourceOptions(); "
              f"o.cache_dir = {str(cache)!r}; "
              f"sys.stdout.buffer.write(_core.read_stream({uri!r}, o))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout
    assert out == data and entry.read_bytes() == data


@pytest.mark.parametrize("meta", [
    {"uri": 1, "size": "x", "etag": [], "sha256": {}},
    {"size": 1.5},
    {"uri": None},
    {"sha256": 7},
])
def test_cache_meta_of_the_wrong_types_is_refetched(nginx, shard_dir, tmp_path, meta):
    """Valid JSON of the wrong types in KEY.meta is a corrupt entry: the
    shard is fetched again (it ended in std::terminate on json::type_error).
    Run in a child process, so a crash fails this test only."""
    name = sorted(p.name for p in shard_dir.glob("*.tar"))[0]
    uri, cache = f"{nginx.url}/{name}", tmp_path / "cache"
    data = (shard_dir / name).read_bytes()
    assert _core.read_stream(uri, options(cache_dir=str(cache))) == data
    [meta_file] = cache.glob("*.meta")
    meta_file.write_text(json.dumps(meta))
    script = ("import sys; from shardloader import _core; o = _core.SourceOptions(); "
              f"o.cache_dir = {str(cache)!r}; "
              f"sys.stdout.buffer.write(_core.read_stream({uri!r}, o))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stdout == data
    assert json.loads(meta_file.read_text())["size"] == len(data)


def test_cache_limit_evicts_least_recently_used(nginx, shard_dir, tmp_path):
    names = sorted(p.name for p in shard_dir.glob("*.tar"))
    largest = max((shard_dir / n).stat().st_size for n in names)
    cache = tmp_path / "cache"
    o = options(cache_dir=str(cache), cache_limit_bytes=2 * largest)
    for epoch in range(2):
        for name in names:
            assert _core.read_stream(f"{nginx.url}/{name}", o) == (shard_dir / name).read_bytes()
            assert sum(p.stat().st_size for p in cached_files(cache)) <= 2 * largest
    assert len(cached_files(cache)) == 2


def test_a_limit_smaller_than_a_shard_streams_uncached(nginx, shard_dir, tmp_path):
    name = sorted(p.name for p in shard_dir.glob("*.tar"))[0]
    cache = tmp_path / "cache"
    o = options(cache_dir=str(cache), cache_limit_bytes=1000)
    reader = _core.open_random_access(f"{nginx.url}/{name}", o)
    assert reader.read_at(0, reader.size) == (shard_dir / name).read_bytes()
    assert cached_files(cache) == []


def test_processes_sharing_a_cache_fetch_each_shard_once(proxy, shard_dir, tmp_path):
    names = sorted(p.name for p in shard_dir.glob("*.tar"))
    cache = tmp_path / "cache"
    script = ("import sys; from shardloader import _core; o = _core.SourceOptions(); "
              f"o.cache_dir = {str(cache)!r}; o.part_size_bytes = 256 << 10\n"
              f"for name in {names!r}:\n"
              f"    data = _core.read_stream({proxy.url!r} + '/' + name, o)\n"
              f"    assert data == open({str(shard_dir)!r} + '/' + name, 'rb').read()\n")
    workers = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(4)]
    assert [w.wait(timeout=120) for w in workers] == [0] * 4
    assert proxy.body_bytes == sum((shard_dir / n).stat().st_size for n in names)
    assert len(cached_files(cache)) == len(names)
    assert not list(cache.glob("*.tmp-*"))


def test_resolve_shards_lists_an_s3_prefix_and_keeps_tar_files(moto, aws_env, monkeypatch):
    moto.check_signatures(False)  # moto cannot check signed listings (boto3's fail too)
    try:
        moto.s3.put_object(Bucket=BUCKET, Key="train/index.json", Body=b"{}")
        monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
        resolved = _core.resolve_shards([f"s3://{BUCKET}/train/"])
    finally:
        moto.s3.delete_object(Bucket=BUCKET, Key="train/index.json")
        moto.check_signatures(True)
    assert resolved == [f"s3://{BUCKET}/train/train-{i:06d}.tar" for i in range(NUM_SHARDS)]


# ---------------------------------------------------------------------------
# Writing shards to S3 (shardloader's requests signed and checked; moto
# cannot check signed listings, so boto3 lists with checks off)

def boto3_listing(moto, call, **kwargs):
    moto.check_signatures(False)
    try:
        return call(Bucket=BUCKET, **kwargs)
    finally:
        moto.check_signatures(True)


def test_shard_writer_writes_s3_multipart_objects_only_when_complete(moto, aws_env, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    rng = random.Random(5)
    payloads = [rng.randbytes(300_000) for _ in range(40)]  # ~12 MB: three 5 MiB parts
    writer = sl.ShardWriter(f"s3://{BUCKET}/written/out-%04d.tar", max_count=40)
    for i, payload in enumerate(payloads):
        writer.write({"__key__": f"k{i:03d}", "bin": payload})
        if i == 30:  # mid-shard: parts uploaded, no object yet
            listed = boto3_listing(moto, moto.s3.list_objects_v2, Prefix="written/")
            assert listed.get("KeyCount", 0) == 0
            uploads = boto3_listing(moto, moto.s3.list_multipart_uploads).get("Uploads", [])
            assert [u["Key"] for u in uploads] == ["written/out-0000.tar"]
    writer.close()
    keys = [c["Key"] for c in
            boto3_listing(moto, moto.s3.list_objects_v2, Prefix="written/")["Contents"]]
    assert keys == ["written/index.json", "written/out-0000.idx", "written/out-0000.tar"]
    data = _core.read_stream(f"s3://{BUCKET}/written/out-0000.tar", options(endpoint_url=moto.url))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
    assert members == [(f"k{i:03d}.bin", p) for i, p in enumerate(payloads)]
    [info] = json.loads(_core.read_stream(f"s3://{BUCKET}/written/index.json",
                                          options(endpoint_url=moto.url)))["shards"]
    assert info["size_bytes"] == len(data)
    assert info["sha256"] == hashlib.sha256(data).hexdigest()


def test_aborted_s3_shard_leaves_no_object_and_no_upload(moto, aws_env):
    # The endpoint given as an option this time, not through the environment.
    writer = sl.ShardWriter(f"s3://{BUCKET}/aborted/out-%04d.tar", max_count=100,
                            destination=options(endpoint_url=moto.url))
    for i in range(25):
        writer.write({"__key__": f"k{i:03d}", "bin": os.urandom(300_000)})
    writer.abort()
    assert boto3_listing(moto, moto.s3.list_objects_v2, Prefix="aborted/").get("KeyCount", 0) == 0
    assert boto3_listing(moto, moto.s3.list_multipart_uploads).get("Uploads", []) == []


def test_pack_writes_to_s3_and_a_loader_reads_the_prefix(moto, aws_env, monkeypatch,
                                                          tmp_path):
    """`pack` into s3:// (shards, their .idx files, index.json), then a Loader
    over the listed prefix reads every sample back, using the .idx files."""
    from shardloader.cli.pack import pack

    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    src = tmp_path / "src"
    expected = {}
    for i in range(30):
        folder = src / ("cats" if i % 2 else "dogs")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:03d}.bin").write_bytes(bytes([i]) * (i + 1))
        expected[f"{folder.name}/f{i:03d}"] = bytes([i]) * (i + 1)
    pack(str(src), f"s3://{BUCKET}/packed/p-%04d.tar", max_count=8, progress=False)
    moto.check_signatures(False)  # moto cannot check signed listings (boto3's fail too)
    try:
        listed = _core.list_prefix(f"s3://{BUCKET}/packed/", options(endpoint_url=moto.url))
        loader = sl.Loader(f"s3://{BUCKET}/packed/", fields={"bin": sl.Bytes("bin")},
                           batch_size=30, shuffle=False, output="numpy")
    finally:
        moto.check_signatures(True)
    assert sum(u.endswith(".idx") for u in listed) == 4  # one per shard
    assert len(loader.shards) == 4
    [batch] = list(loader)
    values, offsets = batch["bin"].values, batch["bin"].offsets
    got = {key: values[offsets[i]:offsets[i + 1]].tobytes()
           for i, key in enumerate(batch["__key__"])}
    assert got == expected


def test_source_options_take_keyword_arguments():
    o = sl.SourceOptions(cache_dir="/tmp/cache", max_concurrency=3, anonymous=True,
                         connect_timeout_s=2.5)
    assert (o.cache_dir, o.max_concurrency, o.anonymous, o.connect_timeout_s) == (
        "/tmp/cache", 3, True, 2.5)
    assert o.part_size_bytes == 8 << 20  # untouched options keep their defaults
    assert "cache_dir='/tmp/cache'" in repr(o)


def test_source_options_name_a_misspelled_option():
    with pytest.raises(TypeError, match="no option 'cache_directory'; did you mean 'cache_dir'"):
        sl.SourceOptions(cache_directory="/tmp/cache")


def test_every_source_option_is_documented():
    for name in dir(_core.SourceOptions):
        attribute = getattr(_core.SourceOptions, name)
        if isinstance(attribute, property):
            assert attribute.__doc__ and len(attribute.__doc__) > 20, name
