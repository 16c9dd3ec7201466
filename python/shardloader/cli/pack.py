"""``shardloader pack SRC OUT_PATTERN``: many small files -> tar shards."""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tqdm import tqdm

from ..writer import ShardWriter

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6,
          "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str) -> int:
    """``"1GiB"`` -> 1073741824, ``"500MB"`` -> 500000000, ``"4096"`` -> 4096."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1GiB, 500MB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


@dataclass
class SampleFiles:
    """The files of one sample: key and (extension, path) pairs."""
    key: str
    files: list[tuple[str, str]] = field(default_factory=list)
    label: int | None = None


def _visible(names):
    return sorted(n for n in names if not n.startswith("."))


def find_samples(src: str) -> tuple[list[SampleFiles], list[str] | None]:
    """Groups the files under ``src`` into samples.

    Files sharing a directory and a stem (the name up to its first dot) form
    one sample whose key is that relative path. If ``src`` has
    subdirectories (the ImageFolder layout), each is a class: a sample gets
    the index of its top folder in sorted order as its ``cls`` label, and
    files directly in ``src`` (e.g. a ``classes.tsv``) are left out, as
    torchvision's ImageFolder does. Hidden files are skipped. Returns the
    samples in sorted key order and the class names (or None)."""
    entries = _visible(os.listdir(src))
    classes = [e for e in entries if os.path.isdir(os.path.join(src, e))] or None
    by_key: dict[str, SampleFiles] = {}
    for root, dirs, files in os.walk(src):
        dirs[:] = _visible(dirs)
        rel_root = os.path.relpath(root, src)
        if classes is not None and rel_root == ".":
            continue
        for name in _visible(files):
            stem, dot, ext = name.partition(".")
            if not dot or not stem or not ext:
                continue
            key = stem if rel_root == "." else f"{rel_root}/{stem}".replace(os.sep, "/")
            sample = by_key.setdefault(key, SampleFiles(key))
            sample.files.append((ext.lower(), os.path.join(root, name)))
            if classes is not None:
                sample.label = classes.index(rel_root.split(os.sep)[0])
    return [by_key[k] for k in sorted(by_key)], classes


def _read(sample: SampleFiles) -> dict:
    record = {"__key__": sample.key}
    for ext, path in sample.files:
        with open(path, "rb") as f:
            record[ext] = f.read()
    if sample.label is not None and "cls" not in record:
        record["cls"] = sample.label
    return record


def pack(src: str, pattern: str, *, max_size_bytes: int = 1 << 30,
         max_count: int = 100_000, num_threads: int = 8,
         index_path: str | None = None, shuffle: bool = True, seed: int = 0,
         progress: bool = True) -> ShardWriter:
    """Packs the files under ``src`` into shards named by ``pattern``.

    With ``shuffle`` (the default) samples are written in a random order
    drawn from ``seed``, so that every shard mixes classes and a loader's
    shuffle buffer only has to mix shards (WebDataset's advice for writing
    shards); otherwise in sorted key order. Files are read by
    ``num_threads`` threads, at most a few hundred samples ahead of the
    writer. Returns the closed writer (``.shards``, ``.index_path``).

    Raises:
        NotFoundError: ``src`` does not exist.
        InvalidArgumentError: a bad pattern or sample key."""
    if not os.path.isdir(src):
        from ..errors import NotFoundError
        raise NotFoundError(f"source directory not found: {src}", uri=src)
    samples, _ = find_samples(src)
    if shuffle:
        random.Random(seed).shuffle(samples)
    window = max(64, 32 * num_threads)
    with ShardWriter(pattern, max_size_bytes=max_size_bytes, max_count=max_count,
                     index_path=index_path) as writer, \
            ThreadPoolExecutor(num_threads) as pool, \
            tqdm(total=len(samples), unit="sample", disable=not progress,
                 file=sys.stderr) as bar:
        for start in range(0, len(samples), window):
            for record in pool.map(_read, samples[start:start + window]):
                writer.write(record)
                bar.update(1)
    return writer


def _run(args) -> int:
    writer = pack(args.src, args.pattern, max_size_bytes=args.max_size,
                  max_count=args.max_count, num_threads=args.threads,
                  index_path=args.index, shuffle=args.shuffle, seed=args.seed)
    total = sum(s.num_samples for s in writer.shards)
    print(f"wrote {total} samples into {len(writer.shards)} shards; "
          f"index: {writer.index_path}")
    return 0


def register(commands) -> None:
    parser = commands.add_parser(
        "pack", help="pack a directory of small files into tar shards",
        description="Walks SRC; files sharing a stem become one sample; in an "
                    "ImageFolder layout (one folder per class) each sample "
                    "gets a .cls label (class index in sorted folder order).")
    parser.add_argument("src", help="directory of small files")
    parser.add_argument("pattern", help="output shard pattern, e.g. "
                        "out/train-%%06d.tar or 'out/train-{000000..}.tar'")
    parser.add_argument("--max-size", type=parse_size, default=1 << 30,
                        help="maximum shard size (default 1GiB)")
    parser.add_argument("--max-count", type=int, default=100_000,
                        help="maximum samples per shard (default 100000)")
    parser.add_argument("--threads", type=int, default=8,
                        help="file-reading threads (default 8)")
    parser.add_argument("--index", default=None,
                        help="index path (default: index.json beside the shards)")
    parser.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                        help="write samples in sorted key order instead of a "
                             "seeded random order")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the sample order (default 0)")
    parser.set_defaults(run=_run)
