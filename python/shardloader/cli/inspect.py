"""``shardloader inspect SHARD``: list a shard's samples and validate it."""

from __future__ import annotations

from collections import Counter

from .. import _core
from ..errors import ShardloaderError


def inspect_shard(uri: str, *, limit: int = 10, out=print) -> int:
    """Reads every sample of the shard at ``uri``, printing the first
    ``limit`` (index, byte offset, key, field sizes) and a summary.

    Returns 0 if the whole shard is valid, 1 otherwise (the error, with its
    byte offset, is printed)."""
    count = 0
    total_bytes = 0
    fields: Counter[str] = Counter()
    out(f"{'index':>7} {'offset':>12}  key  fields")
    try:
        reader = _core.SampleReader(uri, True)
        while (sample := reader.next()) is not None:
            key, offset, index, data = sample
            if count < limit:
                sizes = ", ".join(f"{ext} ({len(v)} B)" for ext, v in data.items())
                out(f"{index:>7} {offset:>12}  {key}  {sizes}")
            count += 1
            fields.update(data.keys())
            total_bytes += sum(len(v) for v in data.values())
    except ShardloaderError as error:
        out(f"{uri}: error after {count} samples: {error}")
        return 1
    if count > limit:
        out(f"    ... {count - limit} more")
    summary = ", ".join(f"{ext} x{n}" for ext, n in sorted(fields.items()))
    out(f"{uri}: {count} samples, {total_bytes} bytes of fields ({summary}); valid")
    return 0


def _run(args) -> int:
    status = 0
    for shard in args.shards:
        status |= inspect_shard(shard, limit=args.limit)
    return status


def register(commands) -> None:
    parser = commands.add_parser("inspect", help="list and validate shards")
    parser.add_argument("shards", nargs="+", help="shard path(s)")
    parser.add_argument("--limit", type=int, default=10,
                        help="samples to list per shard (default 10)")
    parser.set_defaults(run=_run)
