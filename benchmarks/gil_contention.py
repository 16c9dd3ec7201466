"""How much a shardloader iteration slows a pure-Python thread beside it.

Measures the iterations per second of a pure-Python counting loop in a
thread, first alone, then while the main thread iterates a Loader that
decodes with one thread (``num_threads=1``). Getting a batch holds the GIL
only to wrap the tensors, so the Python thread should keep nearly all of its
speed (the project's target: at least 90%). With two cores or more, the
Python thread is pinned to one core and the loader (its threads and the main
thread taking its batches) to another, so that the ratio measures the GIL,
not two threads sharing a core. Alone and beside alternate for several
rounds, and the median ratio is reported, because other load on a shared
machine moves single measurements.

    python3 benchmarks/gil_contention.py [--seconds 2] [--rounds 5] [--shards DIR]

Prints the rates and ratios; writes nothing. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path

import torch  # noqa: F401  (imported up front: importing it mid-run is not hand-off cost)

import shardloader as sl

DEFAULT_SHARDS = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-test" / "shards"


def count_for(seconds: float) -> float:
    """Iterations per second of a pure-Python loop run for ``seconds``."""
    count = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(1000):
            count += 1
    return count / seconds


class Counter(threading.Thread):
    """``count_for`` in its own thread, pinned to ``core`` when given; its
    rate is in ``rate`` once joined."""

    def __init__(self, seconds: float, core: int | None):
        super().__init__()
        self.seconds, self.core, self.rate = seconds, core, 0.0

    def run(self) -> None:
        if self.core is not None:
            os.sched_setaffinity(0, {self.core})  # 0: the calling thread
        self.rate = count_for(self.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="length of each measurement")
    parser.add_argument("--rounds", type=int, default=5,
                        help="alone/beside pairs; the median ratio is reported")
    parser.add_argument("--shards", default=str(DEFAULT_SHARDS))
    args = parser.parse_args()
    if not os.path.isdir(args.shards):
        raise SystemExit(f"no shards at {args.shards}: pass --shards DIR")

    # With two cores or more, the Python thread gets one core and the loader
    # (its threads, and this main thread that takes its batches) another.
    cores = sorted(os.sched_getaffinity(0))
    counter_core, loader_core = (cores[0], cores[1]) if len(cores) > 1 else (None, None)
    if loader_core is not None:
        os.sched_setaffinity(0, {loader_core})  # inherited by the loader's threads

    loader = sl.Loader(args.shards, fields={"image": sl.Image("jpg", size=32),
                                            "label": sl.Int("cls")},
                       batch_size=256, num_threads=1, output="torch")
    epoch = 0
    batches = iter(loader)
    next(batches)  # warm: pipeline started, pools allocated

    def next_batch():
        nonlocal batches, epoch
        try:
            return next(batches)
        except StopIteration:
            epoch += 1
            loader.set_epoch(epoch)
            batches = iter(loader)
            return next(batches)

    ratios = []
    for round_ in range(args.rounds):
        alone = Counter(args.seconds, counter_core)
        alone.start()
        alone.join()
        beside = Counter(args.seconds, counter_core)
        samples, start = 0, time.perf_counter()
        beside.start()
        while beside.is_alive():
            samples += len(next_batch()["label"])
        beside.join()
        loader_rate = samples / (time.perf_counter() - start)
        ratios.append(beside.rate / alone.rate)
        print(f"round {round_}: Python thread alone {alone.rate:,.0f} it/s, beside the loader "
              f"{beside.rate:,.0f} it/s = {ratios[-1]:.3f}x "
              f"(loader: {loader_rate:,.0f} samples/s)")
    placement = (f"Python thread on core {counter_core}, loader on core {loader_core}"
                 if loader_core is not None else "one core shared")
    print(f"speed kept (median of {len(ratios)}): {statistics.median(ratios):.3f}x; "
          f"{placement}")


if __name__ == "__main__":
    main()
