"""``shardloader index SHARDS...``: write the sample index of existing shards.

Each shard "train-000000.tar" gets "train-000000.idx" beside it: DALI's
WebDataset index format (v1.2), which the loader uses for sample-level
splits across ranks, random access and fast resume. ``pack`` writes these
already; this command is for shards made by other tools (GNU tar,
webdataset's ShardWriter, ...). Shards without an index still load: the
loader then reads their headers once per Loader.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .. import _core
from ..errors import ShardloaderError


def index_shards(specs: list[str], *, threads: int = 4, out=print) -> int:
    """Writes the index file of every shard ``specs`` resolve to (paths,
    brace patterns, directories, ``s3://`` prefixes). Returns 0 if all were
    indexed, 1 otherwise (each failure is printed with its shard, offset
    and key)."""
    shards = _core.resolve_shards(specs)

    def index(uri: str):
        try:
            return uri, _core.write_shard_index(uri), None
        except ShardloaderError as error:
            return uri, None, error

    failed = 0
    # The binding releases the GIL while it reads, so threads overlap I/O.
    with ThreadPoolExecutor(max(1, threads)) as pool:
        for uri, count, error in pool.map(index, shards):
            if error is None:
                out(f"{uri}: {count} samples")
            else:
                out(f"{uri}: not indexed: {error}")
                failed += 1
    out(f"indexed {len(shards) - failed} of {len(shards)} shards")
    return 1 if failed else 0


def _run(args) -> int:
    return index_shards(args.shards, threads=args.threads)


def register(commands) -> None:
    parser = commands.add_parser(
        "index", help="write sample indexes (.idx) for existing shards")
    parser.add_argument("shards", nargs="+", help="shard path(s), patterns or directories")
    parser.add_argument("--threads", type=int, default=4,
                        help="shards indexed at once (default 4)")
    parser.set_defaults(run=_run)
