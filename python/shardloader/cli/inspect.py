"""``shardloader inspect SHARDS...``: list shards' samples and validate them."""

from __future__ import annotations

import sys
from collections import Counter

from .. import _core
from ..errors import NotFoundError, ShardloaderError
from .common import non_negative_int, resolve_specs


def _error_line(text: str) -> None:
    print(" ".join(text.split()), file=sys.stderr)


def inspect_shard(uri: str, *, limit: int = 10, out=print, err=_error_line) -> int:
    """Reads every sample of the shard at ``uri``, printing the first
    ``limit`` (index, byte offset, key, field sizes) and a summary to
    ``out`` (None: nothing).

    Returns 0 if the whole shard is valid, 1 otherwise (the error, with its
    byte offset, goes to ``err`` in one line)."""
    out = out or (lambda text: None)
    count = 0
    total_bytes = 0
    fields: Counter[str] = Counter()
    try:
        reader = _core.SampleReader(uri, True)
        out(f"{'index':>7} {'offset':>12}  key  fields")
        while (sample := reader.next()) is not None:
            key, offset, index, data = sample
            if count < limit:
                sizes = ", ".join(f"{ext} ({len(v)} B)" for ext, v in data.items())
                out(f"{index:>7} {offset:>12}  {key}  {sizes}")
            count += 1
            fields.update(data.keys())
            total_bytes += sum(len(v) for v in data.values())
    except NotFoundError as error:
        err(f"{uri}: not found ({error}): check the path")
        return 1
    except ShardloaderError as error:
        err(f"{uri}: invalid after {count} samples: {error}")
        return 1
    if count > limit:
        out(f"    ... {count - limit} more")
    summary = ", ".join(f"{ext} x{n}" for ext, n in sorted(fields.items()))
    out(f"{uri}: {count} samples, {total_bytes} bytes of fields ({summary}); valid")
    return 0


def _run(args) -> int:
    quiet = getattr(args, "quiet", False)
    status = 0
    for shard in resolve_specs(args.shards, quiet=quiet):
        status |= inspect_shard(shard, limit=args.limit, out=None if quiet else print)
    return status



def register(commands) -> None:
    parser = commands.add_parser(
        "inspect", help="list and validate shards",
        description="Reads every sample of each shard, lists the first few "
                    "and says whether the shard is valid (exit 1 if one is not).")
    parser.add_argument("shards", nargs="+",
                        help="shards as Loader takes them: paths, brace patterns "
                             "('train-{000000..000127}.tar'), folders, index.json, "
                             "'a.tar::b.tar', s3:// prefixes")
    parser.add_argument("--limit", type=non_negative_int, default=10,
                        help="samples to list per shard (default 10)")
    parser.set_defaults(run=_run)
