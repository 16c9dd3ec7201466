"""``shardloader pack SRC OUT_PATTERN``: many small files -> tar shards."""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tqdm import tqdm

from ..errors import (AlreadyExistsError, InvalidArgumentError, NotFoundError,
                      PermissionDeniedError)
from ..writer import ShardWriter
from .common import positive_int

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6,
          "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str) -> int:
    """``"1GiB"`` -> 1073741824, ``"500MB"`` -> 500000000, ``"4096"`` -> 4096."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1GiB, 500MB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


# One number placeholder: printf style ("%06d") or an open brace range
# ("{000000..}"), as ShardWriter takes.
_PLACEHOLDER = re.compile(r"%0?\d*d|\{\d+\.\.\}")


def check_pattern(pattern: str) -> str:
    """Returns ``pattern`` if its file name has exactly one number
    placeholder (``%06d`` or ``{000000..}``) and the rest of it none.

    Raises:
        InvalidArgumentError: naming the pattern and the fix."""
    found = _PLACEHOLDER.findall(pattern)
    stray = pattern.count("%") - sum(p.startswith("%") for p in found)
    name = pattern.rsplit("/", 1)[-1]
    if len(found) != 1 or stray or not _PLACEHOLDER.search(name):
        where = "" if len(found) != 1 or stray else " in its file name"
        raise InvalidArgumentError(
            f"shard pattern {pattern!r} needs exactly one number placeholder{where} "
            f"such as %06d or {{000000..}} (it has {len(found) + stray}), "
            "e.g. out/train-%06d.tar", uri=pattern)
    return pattern


def _pattern_type(text: str) -> str:
    try:
        return check_pattern(text)
    except InvalidArgumentError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _shard_name_regex(pattern: str) -> re.Pattern:
    """Matches the file names ``pattern`` gives its shards."""
    name = os.path.basename(pattern)
    match = _PLACEHOLDER.search(name)
    return re.compile(re.escape(name[:match.start()]) + r"\d+" +
                      re.escape(name[match.end():]) + r"\Z")


def existing_shards(pattern: str) -> list[str]:
    """Paths of the shards of ``pattern`` already in its (local) folder."""
    folder = os.path.dirname(pattern) or "."
    if "://" in pattern or not os.path.isdir(folder):
        return []
    regex = _shard_name_regex(pattern)
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if regex.match(n))


@dataclass
class SampleFiles:
    """The files of one sample: key and (extension, path) pairs."""
    key: str
    files: list[tuple[str, str]] = field(default_factory=list)
    label: int | None = None


def _visible(names, folder: str = "", skipped: list | None = None):
    if skipped is not None:
        skipped.extend((os.path.join(folder, n) if folder not in ("", ".") else n, "hidden")
                       for n in sorted(names) if n.startswith("."))
    return sorted(n for n in names if not n.startswith("."))


def find_samples(src: str, skipped: list[tuple[str, str]] | None = None
                 ) -> tuple[list[SampleFiles], list[str] | None]:
    """Groups the files under ``src`` into samples.

    Files sharing a directory and a stem (the name up to its first dot) form
    one sample whose key is that relative path. If ``src`` has
    subdirectories (the ImageFolder layout), each is a class: a sample gets
    the index of its top folder in sorted order as its ``cls`` label, and
    files directly in ``src`` (e.g. a ``classes.tsv``) are left out, as
    torchvision's ImageFolder does. Hidden files are skipped. Returns the
    samples in sorted key order and the class names (or None); each file
    left out is added to ``skipped`` (if given) as (path relative to
    ``src``, reason)."""
    entries = _visible(os.listdir(src))
    classes = [e for e in entries if os.path.isdir(os.path.join(src, e))] or None
    by_key: dict[str, SampleFiles] = {}
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        dirs[:] = _visible(dirs, rel_root, skipped)
        if classes is not None and rel_root == ".":
            if skipped is not None:
                skipped.extend((n, "outside the class folders") for n in _visible(files))
            continue
        for name in _visible(files, rel_root, skipped):
            stem, dot, ext = name.partition(".")
            if not dot or not stem or not ext:
                if skipped is not None:
                    skipped.append((name if rel_root == "." else os.path.join(rel_root, name),
                                    "no <name>.<extension>"))
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


@dataclass
class PackedShard:
    """One shard written by :func:`pack`, under its final name."""
    path: str
    num_samples: int
    size_bytes: int
    sha256: str


@dataclass
class PackResult:
    """What :func:`pack` wrote: ``shards`` (final paths), ``index_path``,
    ``extensions`` (field extension -> samples with it), ``skipped`` (files
    left out: (path relative to the source, reason)) and ``replaced`` (old
    shards removed by ``overwrite``)."""
    shards: list[PackedShard]
    index_path: str
    extensions: Counter
    skipped: list[tuple[str, str]]
    replaced: list[str] = field(default_factory=list)

    @property
    def num_samples(self) -> int:
        return sum(s.num_samples for s in self.shards)


def pack(src: str, pattern: str, *, max_size_bytes: int = 1 << 30,
         max_count: int = 100_000, num_threads: int = 8,
         index_path: str | None = None, shuffle: bool = True, seed: int = 0,
         progress: bool = True, overwrite: bool = False) -> PackResult:
    """Packs the files under ``src`` into shards named by ``pattern``.

    With ``shuffle`` (the default) samples are written in a random order
    drawn from ``seed``, so that every shard mixes classes and a loader's
    shuffle buffer only has to mix shards (WebDataset's advice for writing
    shards); otherwise in sorted key order. Files are read by
    ``num_threads`` threads, at most a few hundred samples ahead of the
    writer. The output folder is created (with its parents) if needed.

    A folder that already holds shards of ``pattern`` is refused unless
    ``overwrite``: then the new set is written aside (a hidden folder in
    the output folder) and moved in only when complete, and the old shards
    it does not replace are removed after that; a failure leaves the old
    set as it was.

    Raises:
        NotFoundError: ``src`` does not exist.
        InvalidArgumentError: ``src`` is not a folder or holds no file to
            pack; a pattern without exactly one number placeholder; a bad
            sample key.
        AlreadyExistsError: shards of ``pattern`` are there and not
            ``overwrite``.
        PermissionDeniedError: the output folder cannot be created."""
    if not os.path.exists(src):
        raise NotFoundError(f"source folder not found: {src} (check the path)", uri=src)
    if not os.path.isdir(src):
        raise InvalidArgumentError(
            f"source {src} is not a folder: give the folder that holds the files", uri=src)
    check_pattern(pattern)
    skipped: list[tuple[str, str]] = []
    samples, _ = find_samples(src, skipped)
    if not samples:
        raise InvalidArgumentError(
            f"no files to pack in {src}: it needs files named <name>.<extension> "
            f"({len(skipped)} skipped)", uri=src)
    remote = "://" in pattern
    folder = os.path.dirname(pattern) or "."
    old = existing_shards(pattern)
    if old and not overwrite:
        raise AlreadyExistsError(
            f"{folder} already holds {len(old)} shard{'s' if len(old) != 1 else ''} of "
            f"{os.path.basename(pattern)} ({os.path.basename(old[0])}, ...): pass "
            "--overwrite (overwrite=True) to replace them once the new set is complete, "
            "or choose another folder", uri=folder)
    created = None
    if not remote and not os.path.isdir(folder):
        created = folder
        try:
            os.makedirs(folder)
        except OSError as error:
            raise PermissionDeniedError(
                f"cannot create the output folder {folder}: "
                f"{error.strerror or error}; choose a folder you can write to",
                uri=folder) from error
    if shuffle:
        random.Random(seed).shuffle(samples)
    final_index = index_path or os.path.join(folder, "index.json")
    staging = tempfile.mkdtemp(prefix=".shardloader-pack-", dir=folder) if old else None
    write_pattern = (os.path.join(staging, os.path.basename(pattern)) if staging
                     else pattern)
    extensions: Counter = Counter()
    try:
        writer = _write(samples, write_pattern, extensions, progress=progress,
                        max_size_bytes=max_size_bytes, max_count=max_count,
                        num_threads=num_threads,
                        index_path=os.path.join(staging, "index.json") if staging
                        else index_path)
        shards = [PackedShard(os.path.join(folder, os.path.basename(s.path)) if staging
                              else s.path, s.num_samples, s.size_bytes, s.sha256)
                  for s in writer.shards]
        replaced = []
        if staging:
            # The new set is complete: move it in, then drop the old shards.
            for shard, info in zip(shards, writer.shards):
                os.replace(info.path, shard.path)
                os.replace(_idx(info.path), _idx(shard.path))
            os.replace(writer.index_path, final_index)
            kept = {s.path for s in shards}
            for path in old:
                if path not in kept:
                    os.remove(path)
                    if os.path.exists(_idx(path)):
                        os.remove(_idx(path))
                    replaced.append(path)
    except BaseException:
        if created is not None and not os.listdir(created):
            os.rmdir(created)
        raise
    finally:
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
    return PackResult(shards=shards, index_path=final_index if staging else writer.index_path,
                      extensions=extensions, skipped=skipped, replaced=replaced)


def _idx(shard: str) -> str:
    return shard[:-len(".tar")] + ".idx" if shard.endswith(".tar") else shard + ".idx"


def _write(samples: list[SampleFiles], pattern: str, extensions: Counter, *,
           progress: bool, num_threads: int, **options) -> ShardWriter:
    window = max(64, 32 * num_threads)
    with ShardWriter(pattern, **options) as writer, \
            ThreadPoolExecutor(num_threads) as pool, \
            tqdm(total=len(samples), unit="sample", disable=not progress,
                 file=sys.stderr) as bar:
        for start in range(0, len(samples), window):
            for record in pool.map(_read, samples[start:start + window]):
                writer.write(record)
                extensions.update(k for k in record if not k.startswith("__"))
                bar.update(1)
    return writer


def summary(result: PackResult, *, max_skipped: int = 10) -> str:
    """What a pack wrote, for people: samples, shards, fields, skipped files."""
    count = len(result.shards)
    lines = [f"wrote {result.num_samples} samples into {count} shard{'s' if count != 1 else ''}"
             f" ({_size(sum(s.size_bytes for s in result.shards))}); "
             f"index: {result.index_path}"]
    lines.append("fields: " + ", ".join(f"{ext} x{n}"
                                        for ext, n in sorted(result.extensions.items())))
    if result.skipped:
        shown = ", ".join(f"{path} ({why})" for path, why in result.skipped[:max_skipped])
        more = len(result.skipped) - max_skipped
        lines.append(f"skipped {len(result.skipped)} file{'s' if len(result.skipped) != 1 else ''}"
                     f": {shown}" + (f", ... {more} more" if more > 0 else ""))
    if result.replaced:
        lines.append(f"removed {len(result.replaced)} old shards not replaced by new ones")
    return "\n".join(lines)


def _size(num_bytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit}"
    return f"{num_bytes:.0f} B"


def _run(args) -> int:
    quiet = getattr(args, "quiet", False)
    result = pack(args.src, args.pattern, max_size_bytes=args.max_size,
                  max_count=args.max_count, num_threads=args.threads,
                  index_path=args.index, shuffle=args.shuffle, seed=args.seed,
                  progress=not quiet and sys.stderr.isatty(), overwrite=args.overwrite)
    if not quiet:
        print(summary(result))
    return 0



def register(commands) -> None:
    parser = commands.add_parser(
        "pack", help="pack a directory of small files into tar shards",
        description="Walks SRC; files sharing a stem become one sample; in an "
                    "ImageFolder layout (one folder per class) each sample "
                    "gets a .cls label (class index in sorted folder order). "
                    "Creates the output folder; refuses one that already holds "
                    "shards of PATTERN unless --overwrite. Ends with the field "
                    "extensions found and the files skipped.")
    parser.add_argument("src", help="directory of small files")
    parser.add_argument("pattern", type=_pattern_type,
                        help="output shard pattern with one number placeholder, e.g. "
                        "out/train-%%06d.tar or 'out/train-{000000..}.tar'")
    parser.add_argument("--max-size", type=parse_size, default=1 << 30,
                        help="maximum shard size (default 1GiB)")
    parser.add_argument("--max-count", type=positive_int, default=100_000,
                        help="maximum samples per shard (default 100000)")
    parser.add_argument("--threads", type=positive_int, default=8,
                        help="file-reading threads (default 8)")
    parser.add_argument("--index", default=None,
                        help="index path (default: index.json beside the shards)")
    parser.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                        help="write samples in sorted key order instead of a "
                             "seeded random order")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the sample order (default 0)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the shards of PATTERN already in the output "
                             "folder (the old ones go only once the new set is "
                             "complete)")
    parser.set_defaults(run=_run)
