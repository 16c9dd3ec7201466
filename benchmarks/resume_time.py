"""Time to resume in the middle of a 1000-shard epoch, and the state's size.

Packs 1000 shards of 100 small samples (a .cls label and 1 KiB of bytes),
then, each in a fresh Loader:
  * first batch of a fresh epoch (sample counts from the .idx files);
  * first batch after load_state_dict() at the epoch's middle;
  * the same resume with the .idx files removed (headers read instead);
  * for scale: reaching the middle by iterating from the start.

    python benchmarks/resume_time.py [--dir DIR] [--shards 1000]

Prints one JSON object. Timings are wall-clock seconds on this machine; run
it on the machine whose numbers you quote.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import shardloader as sl

FIELDS = {"label": sl.Int("cls"), "raw": sl.Bytes("bin")}


def make_loader(shards, **kwargs):
    return sl.Loader(shards, FIELDS, batch_size=256, seed=0, output="numpy", **kwargs)


def first_batch_s(loader) -> float:
    start = time.perf_counter()
    next(iter(loader))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--shards", type=int, default=1000)
    parser.add_argument("--per-shard", type=int, default=100)
    args = parser.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="shardloader-resume-")
    pattern = os.path.join(root, "r-%06d.tar")
    with sl.ShardWriter(pattern, max_count=args.per_shard) as writer:
        for i in range(args.shards * args.per_shard):
            writer.write({"__key__": f"s{i:08d}", "cls": i, "bin": bytes(1024)})
    shards = [info.path for info in writer.shards]

    fresh = first_batch_s(make_loader(shards))

    loader = make_loader(shards)
    iterator = iter(loader)
    middle = len(loader) // 2
    start = time.perf_counter()
    for _ in range(middle):
        next(iterator)
    replay_s = time.perf_counter() - start
    state = loader.state_dict()

    t0 = time.perf_counter()
    resumed = make_loader(shards)
    resumed.load_state_dict(state)
    load_s = time.perf_counter() - t0
    resume_first = first_batch_s(resumed)

    for path in shards:
        os.remove(path[:-len(".tar")] + ".idx")
    t0 = time.perf_counter()
    scanned = make_loader(shards)
    scanned.load_state_dict(state)
    resume_scan = time.perf_counter() - t0 + first_batch_s(scanned)

    print(json.dumps({
        "shards": len(shards), "samples": args.shards * args.per_shard,
        "state_json_bytes": len(json.dumps(state)), "state": state,
        "fresh_first_batch_s": round(fresh, 4),
        "resume_load_state_s": round(load_s, 4),
        "resume_to_first_batch_s": round(load_s + resume_first, 4),
        "resume_without_idx_files_s": round(resume_scan, 4),
        "replay_to_middle_s": round(replay_s, 4),
    }, indent=2))


if __name__ == "__main__":
    main()
