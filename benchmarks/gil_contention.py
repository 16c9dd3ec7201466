"""How much a shardloader iteration slows a pure-Python thread beside it.

Measures the iterations per second of a pure-Python counting loop in a
thread, first alone, then while the main thread iterates a Loader that
decodes with one thread (``num_threads=1``), on the same cores. Getting a
batch holds the GIL only to wrap the tensors, so the Python thread should
keep nearly all of its speed (the project's target: at least 90%).

    python3 benchmarks/gil_contention.py [--seconds 5] [--shards DIR]

Prints both rates and their ratio; writes nothing. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

import torch  # noqa: F401  (imported up front: importing it mid-run is not hand-off cost)

import shardloader as sl

DEFAULT_SHARDS = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-test" / "shards"


def count_for(seconds: float, stop: threading.Event | None = None) -> float:
    """Iterations per second of a pure-Python loop run for ``seconds``."""
    count = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(1000):
            count += 1
    return count / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--shards", default=str(DEFAULT_SHARDS))
    args = parser.parse_args()
    if not os.path.isdir(args.shards):
        raise SystemExit(f"no shards at {args.shards}: pass --shards DIR")

    alone = count_for(args.seconds)

    loader = sl.Loader(args.shards, fields={"image": sl.Image("jpg", size=32),
                                            "label": sl.Int("cls")},
                       batch_size=256, num_threads=1, output="torch")
    next(iter(loader))  # warm: pipeline started, pools allocated
    result = {}
    counter = threading.Thread(target=lambda: result.update(rate=count_for(args.seconds)))
    samples = 0
    counter.start()
    epoch = 0
    while counter.is_alive():
        loader.set_epoch(epoch)
        for batch in loader:
            samples += len(batch["label"])
            if not counter.is_alive():
                break
        epoch += 1
    counter.join()
    beside = result["rate"]
    print(f"pure-Python thread alone:            {alone:,.0f} iterations/s")
    print(f"beside a 1-thread loader:            {beside:,.0f} iterations/s "
          f"(loader: {samples / args.seconds:,.0f} samples/s)")
    print(f"speed kept:                          {beside / alone:.2f}x "
          f"on {len(os.sched_getaffinity(0))} cores")


if __name__ == "__main__":
    main()
