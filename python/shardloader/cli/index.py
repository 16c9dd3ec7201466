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

import sys

from .. import _core
from ..errors import ShardloaderError
from .common import resolve_specs


def _error_line(text: str) -> None:
    print(text, file=sys.stderr)


def index_shards(specs: list[str], *, threads: int = 4, out=print,
                 err=_error_line) -> int:
    """Writes the index file of every shard ``specs`` resolve to (paths,
    brace patterns, directories, ``s3://`` prefixes: as Loader takes them).
    Returns 0 if all were indexed, 1 otherwise (each failure goes to
    ``err`` in one line, with its shard, offset and key)."""
    shards = resolve_specs(specs, quiet=out is None)
    out = out or (lambda text: None)

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
                err(" ".join(f"{uri}: not indexed: {error}".split()))
                failed += 1
    out(f"indexed {len(shards) - failed} of {len(shards)} shards")
    return 1 if failed else 0


def _run(args) -> int:
    return index_shards(args.shards, threads=args.threads,
                        out=None if getattr(args, "quiet", False) else print)


def register(commands) -> None:
    parser = commands.add_parser(
        "index", help="write sample indexes (.idx) for existing shards")
    parser.add_argument("shards", nargs="+",
                        help="shards as Loader takes them: paths, brace patterns "
                             "('train-{000000..000127}.tar'), folders, index.json, "
                             "'a.tar::b.tar', s3:// prefixes")
    parser.add_argument("--threads", type=int, default=4,
                        help="shards indexed at once (default 4)")
    parser.set_defaults(run=_run)
