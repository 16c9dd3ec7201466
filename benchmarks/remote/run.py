"""Remote-shard throughput: local files vs HTTP (nginx) vs S3 (moto), all on
loopback, and HTTP with 20 ms added per request; webdataset over HTTP beside.

netem needs the sch_netem kernel module; where it is missing (as in this
project's container) the added latency comes from a proxy that waits 20 ms
before forwarding each request (tests/python/remote_servers.py: FaultProxy).
The no-latency baseline for that comparison goes through the same proxy with
0 ms, so the ratio measures latency hiding alone.

Usage: python benchmarks/remote/run.py [--shards 4] [--shard-mb 64]
Writes benchmarks/remote/results.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))

import shardloader as sl  # noqa: E402
from shardloader import _core  # noqa: E402
from remote_servers import FaultProxy, MotoS3, Nginx  # noqa: E402


def write_shards(directory: Path, count: int, shard_mb: int) -> list[Path]:
    rng = random.Random(0)
    sample = 256 << 10
    per_shard = shard_mb * (1 << 20) // sample
    with sl.ShardWriter(str(directory / "bench-%06d.tar"), max_count=per_shard) as writer:
        for i in range(count * per_shard):
            writer.write({"__key__": f"s{i:07d}", "bin": rng.randbytes(sample)})
    return sorted(directory.glob("bench-*.tar"))


def rate(read, total_bytes: int, repeats: int = 3) -> float:
    """Best of `repeats` in MB/s."""
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        read()
        best = max(best, total_bytes / (time.perf_counter() - start) / 1e6)
    return best


def stream_all(uris, options):
    def read():
        for uri in uris:
            _core.read_stream(uri, options)
    return read


def loader_all(uris):
    def read():
        loader = sl.Loader(uris, fields={"bin": sl.Bytes("bin")}, batch_size=32,
                           shuffle=False, output="numpy", rank=0, world_size=1)
        for _ in loader:
            pass
        loader.close()
    return read


def webdataset_all(uris):
    import webdataset as wds

    def read():
        for sample in wds.WebDataset(uris, shardshuffle=False):
            len(sample["bin"])
    return read


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--shard-mb", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=8,
                        help="ranged GETs in flight per shard (SourceOptions.max_concurrency)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sl-remote-bench-"))
    os.chmod(work, 0o755)
    (work / "data").mkdir()
    paths = write_shards(work / "data", args.shards, args.shard_mb)
    names = [p.name for p in paths]
    total = sum(p.stat().st_size for p in paths)
    nginx = Nginx(work / "data", work / "nginx")
    moto = MotoS3()
    moto.s3.create_bucket(Bucket="bench")
    for p in paths:
        moto.s3.put_object(Bucket="bench", Key=p.name, Body=p.read_bytes())
    moto.check_signatures()
    os.environ["AWS_ACCESS_KEY_ID"] = moto.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = moto.secret_key
    fast = FaultProxy(nginx.url)
    slow = FaultProxy(nginx.url, delay_s=args.latency_ms / 1000)
    options = _core.SourceOptions()  # defaults: 8 MiB parts, 8 in flight
    options.max_concurrency = args.concurrency
    s3_options = _core.SourceOptions()
    s3_options.endpoint_url = moto.url
    one = _core.SourceOptions()
    one.max_concurrency = 1
    local = [str(p) for p in paths]
    http = [f"{nginx.url}/{n}" for n in names]
    results = {
        "bytes": total,
        "local stream": rate(stream_all(local, options), total),
        "http stream (nginx)": rate(stream_all(http, options), total),
        "s3 stream (moto)": rate(stream_all([f"s3://bench/{n}" for n in names], s3_options), total),
        "http via proxy, 0 ms": rate(stream_all([f"{fast.url}/{n}" for n in names], options), total),
        f"http via proxy, {args.latency_ms:g} ms, {args.concurrency} in flight":
            rate(stream_all([f"{slow.url}/{n}" for n in names], options), total),
        f"http via proxy, {args.latency_ms:g} ms, 1 in flight":
            rate(stream_all([f"{slow.url}/{n}" for n in names], one), total, repeats=1),
        "loader, local": rate(loader_all(local), total),
        "loader, http (nginx)": rate(loader_all(http), total),
    }
    try:
        results["webdataset, http (nginx)"] = rate(webdataset_all(http), total)
    except ImportError:
        results["webdataset, http (nginx)"] = None
    results[f"latency ratio ({args.concurrency} in flight / 0 ms)"] = (
        results[f"http via proxy, {args.latency_ms:g} ms, {args.concurrency} in flight"]
        / results["http via proxy, 0 ms"])
    for proc in (fast, slow, nginx, moto):
        proc.close()
    (Path(__file__).parent / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    for name, value in results.items():
        print(f"{name:45s} {value:10.2f}" if isinstance(value, float) else f"{name:45s} {value}")


if __name__ == "__main__":
    main()
