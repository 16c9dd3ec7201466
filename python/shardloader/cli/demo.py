"""``shardloader demo``: pack a real dataset, train on it, compare loaders.

With no arguments the demo writes scikit-learn's handwritten digits (1797
8x8 images, bundled with scikit-learn) as one PNG file per image, packs them
into shards with :func:`shardloader.cli.pack.pack` (what ``shardloader pack``
runs), then trains the same small PyTorch model on the CPU twice on the same
cores:

- **shardloader**: :class:`shardloader.Loader` over the shards, decoding in
  ``--workers`` threads;
- **naive**: a ``torch.utils.data.Dataset`` that opens each file with PIL (as
  torchvision's ImageFolder does) in a ``DataLoader`` with ``--workers``
  worker processes.

For each it measures loader throughput alone, training throughput, the share
of training time spent waiting for data, the final training loss and the
accuracy on held-out files, and prints them side by side. ``--data DIR`` runs
the same on any ImageFolder directory of JPEG/PNG files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Iterator

from ..errors import ShardloaderError
from . import demo_data
from .common import positive_int
from .demo_data import ImageFile, ImageFolder

#: One pass over a split: (images uint8 (B, S, S, 3), labels int64 (B,))
#: tensor pairs.
Batches = Iterable[tuple]

_DESCRIPTION = (
    "Writes scikit-learn's handwritten digits (1797 8x8 images) as one PNG "
    "file per image, or takes the ImageFolder directory given by --data "
    "(<class>/<image>.jpg), holds out every 5th file of each class, packs "
    "both splits into shards as 'shardloader pack' does, then trains the "
    "same small PyTorch model on the CPU from shardloader's Loader and from "
    "a torch DataLoader that opens each file with PIL, on the same cores. "
    "Prints loader and training throughput, time waiting for data, loss and "
    "accuracy side by side.")

_DEPENDENCIES = "the demo needs torch, scikit-learn and pillow: pip install 'shardloader[demo]'"


@dataclass
class Plan:
    """What one demo run does: data, shards and training settings.

    ``size`` is the side of the square images fed to the model, in pixels;
    ``num_workers`` is both shardloader's decode threads and the naive
    DataLoader's worker processes; ``source`` names the data for people."""
    source: str
    folder: ImageFolder
    train: list[ImageFile]
    test: list[ImageFile]
    train_shards: list[str]
    test_shards: list[str]
    shard_bytes: int
    size: int
    epochs: int
    batch_size: int
    num_workers: int
    seed: int
    learning_rate: float

    @property
    def held_out(self) -> bool:
        """Whether accuracy is measured on held-out files (else on train)."""
        return bool(self.test)


@dataclass
class Result:
    """One loader's measurements. Speeds are in samples per second over
    wall-clock time; ``data_wait_fraction`` is the share (0..1) of the
    training loop's time spent waiting for the next batch."""
    cold_pass_samples_per_s: float
    warm_pass_samples_per_s: float
    train_samples_per_s: float
    data_wait_fraction: float
    final_train_loss: float
    accuracy: float
    total_s: float


# ----------------------------------------------------------------- command --

def register(commands) -> None:
    parser = commands.add_parser(
        "demo", help="pack a real dataset and train on it, against a naive loader",
        description=_DESCRIPTION)
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="ImageFolder directory (<class>/<image>.jpg) to use "
                             "instead of the bundled digits")
    parser.add_argument("--workdir", metavar="DIR", default=None,
                        help="keep files here (its digits/, staged/ and shards/ "
                             "folders are replaced); default: a temporary "
                             "directory, removed at the end")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="write the results here (default: "
                             "<workdir>/demo-results.json when --workdir is given)")
    parser.add_argument("--epochs", type=positive_int, default=5,
                        help="training epochs (default 5)")
    parser.add_argument("--batch-size", type=positive_int, default=64,
                        help="samples per batch (default 64)")
    parser.add_argument("--workers", type=positive_int, default=_num_cpus(),
                        help="shardloader decode threads and DataLoader worker "
                             "processes (default: the CPUs this process may "
                             f"use, here {_num_cpus()})")
    parser.add_argument("--size", type=positive_int, default=None,
                        help="image side in pixels after resize and center crop "
                             "(default 8 for the digits, 64 with --data)")
    parser.add_argument("--max-count", type=positive_int, default=200,
                        help="samples per shard (default 200)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the order in shards, of shuffling and of "
                             "model initialisation (default 0)")
    parser.add_argument("--lr", type=float, default=None,
                        help="Adam learning rate (default 3e-3 for the digits, "
                             "1e-3 with --data)")
    parser.set_defaults(run=_run)



def _num_cpus() -> int:
    """CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _run(args) -> int:
    try:
        import PIL  # noqa: F401
        import torch  # noqa: F401
        if args.data is None:
            import sklearn  # noqa: F401
    except ImportError as error:
        print(f"shardloader demo: {_DEPENDENCIES} ({error})", file=sys.stderr)
        return 1
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        print(f"shardloader demo: no directory for --json {args.json}", file=sys.stderr)
        return 1
    try:
        if args.workdir is not None:
            os.makedirs(args.workdir, exist_ok=True)
            return _demo(args, args.workdir)
        with tempfile.TemporaryDirectory(prefix="shardloader-demo-") as workdir:
            return _demo(args, workdir)
    except Exception as error:  # noqa: BLE001: one clear line, non-zero exit
        print(f"shardloader demo: failed: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1


def _demo(args, workdir: str) -> int:
    import torch

    started = time.perf_counter()
    plan = _prepare(args, workdir)
    print(_describe(plan))
    # The model is small: one thread runs it well, and leaves the cores to
    # the loaders (several spinning intra-op threads on busy cores stall).
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _warm_up(plan)
        results = {"shardloader": _run_path(plan, "shardloader", _ShardloaderPasses),
                   "naive": _run_path(plan, "naive", _NaivePasses)}
    except ShardloaderError as error:
        raise _naming_file(error, plan) from error
    finally:
        torch.set_num_threads(torch_threads)
    print()
    print(_table(plan, results))
    json_path = args.json or (os.path.join(workdir, "demo-results.json")
                              if args.workdir is not None else None)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(_report(plan, results), f, indent=2)
        print(f"results written to {json_path}")
    else:
        print("results not saved (pass --json PATH or --workdir DIR to keep them)")
    print(f"demo finished in {time.perf_counter() - started:.1f} s")
    return 0


# -------------------------------------------------------------------- data --

def _prepare(args, workdir: str) -> Plan:
    """Materialises the dataset, splits it and packs each split."""
    from .pack import pack

    if args.data is None:
        print("writing scikit-learn's digits as PNG files...", flush=True)
        root = demo_data.write_digits(_fresh_dir(workdir, "digits"))
        source = "scikit-learn's digits (sklearn.datasets.load_digits)"
    else:
        root = source = args.data
    folder = demo_data.scan_image_folder(root, seed=args.seed)
    train, test = demo_data.split(folder.files)
    shards: dict[str, list] = {}
    progress = sys.stderr.isatty()
    for name, files in (("train", train), ("test", test)):
        if not files:
            continue
        print(f"packing {len(files)} {name} files...", flush=True)
        staged = demo_data.stage(files, os.path.join(workdir, "staged", name))
        writer = pack(staged, os.path.join(_fresh_dir(workdir, "shards", name),
                                           f"{name}-%06d.tar"),
                      max_count=args.max_count, progress=progress)
        shards[name] = writer.shards
        print(f"  {len(writer.shards)} shards, "
              f"{_size(sum(s.size_bytes for s in writer.shards))}", flush=True)
    default_size, default_lr = (64, 1e-3) if args.data else (8, 3e-3)
    return Plan(source=source, folder=folder, train=train, test=test,
                train_shards=[s.path for s in shards["train"]],
                test_shards=[s.path for s in shards.get("test", [])],
                shard_bytes=sum(s.size_bytes for v in shards.values() for s in v),
                size=args.size or default_size, epochs=args.epochs,
                batch_size=args.batch_size, num_workers=args.workers,
                seed=args.seed,
                learning_rate=default_lr if args.lr is None else args.lr)


def _fresh_dir(*parts: str) -> str:
    """An empty directory at ``os.path.join(*parts)`` (replacing one there)."""
    path = os.path.join(*parts)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def _naming_file(error: ShardloaderError, plan: Plan) -> ShardloaderError:
    """``error`` with the original file of its sample (``error.key``) named."""
    paths = {f.key: f.path for f in plan.folder.files}
    if error.key not in paths:
        return error
    return type(error)(f"{error}; that sample is {paths[error.key]}",
                       uri=error.uri, offset=error.offset, key=error.key)


def _describe(plan: Plan) -> str:
    folder = plan.folder
    num_files = len(folder.files)
    num_shards = len(plan.train_shards) + len(plan.test_shards)
    split = (f"{len(plan.train)} train / {len(plan.test)} test files"
             if plan.held_out else
             f"all {num_files} files train (fewer than {demo_data.TEST_EVERY} "
             "per class: nothing held out)")
    return (f"data: {plan.source}: {num_files} image files in {len(folder.classes)} "
            f"classes, {_size(folder.num_bytes)} ({_size(folder.num_bytes / num_files)} "
            f"per file); {split}; {num_shards} shards of {_size(plan.shard_bytes)} in "
            "all, samples in shuffled order\n"
            f"setup: {_num_cpus()} CPU cores; shardloader num_threads={plan.num_workers}; "
            f"DataLoader num_workers={plan.num_workers} (persistent); images "
            f"{plan.size}x{plan.size} RGB; batch {plan.batch_size}; {plan.epochs} epochs; "
            f"model: {_model_name(plan.size)} in 1 torch thread")


def _size(num_bytes: float) -> str:
    """``1234567`` -> ``"1.2 MB"`` (decimal units)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit}"
    return f"{num_bytes:.0f} B"


# ----------------------------------------------------------------- loaders --
#
# Each path is a class built as (plan, split "train" or "test", shuffle): a
# context manager (its threads or worker processes stop on the way out) and a
# PassFactory, called with the epoch (which seeds the shuffle) to start a pass.

PassFactory = Callable[[int], Batches]


class _ShardloaderPasses:
    """Passes over a split's shards through :class:`shardloader.Loader`."""

    def __init__(self, plan: Plan, split: str, shuffle: bool):
        import shardloader as sl
        shards = plan.train_shards if split == "train" else plan.test_shards
        self._loader = sl.Loader(
            shards, fields={"image": sl.Image("jpg;jpeg;png", size=plan.size),
                            "label": sl.Int("cls")},
            batch_size=plan.batch_size, shuffle=shuffle, seed=plan.seed,
            num_threads=plan.num_workers)

    def __call__(self, epoch: int) -> Batches:
        self._loader.set_epoch(epoch)
        return ((batch["image"], batch["label"]) for batch in self._loader)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._loader.close()


class _NaivePasses:
    """Passes over a split's files: PIL per file in a torch DataLoader."""

    def __init__(self, plan: Plan, split: str, shuffle: bool):
        import torch
        from torch.utils.data import DataLoader
        files = plan.train if split == "train" else plan.test
        self._generator = torch.Generator()
        self._seed = plan.seed
        self._loader = DataLoader(
            _FileDataset(files, plan.size), batch_size=plan.batch_size,
            shuffle=shuffle, generator=self._generator,
            num_workers=plan.num_workers, persistent_workers=True)

    def __call__(self, epoch: int) -> Batches:
        self._generator.manual_seed(self._seed * 1_000_003 + epoch)
        return self._loader

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # Persistent workers stop when the DataLoader's iterator is freed.
        self._loader = None


class _FileDataset:
    """``dataset[i]`` is file ``i`` decoded: (image uint8 (S, S, 3) tensor,
    label int), as torchvision's ``ImageFolder`` with ``Resize(S)`` and
    ``CenterCrop(S)`` gives (before ``ToTensor``)."""

    def __init__(self, files: list[ImageFile], size: int):
        self._files = files
        self._size = size

    def __len__(self) -> int:
        return len(self._files)

    def __getitem__(self, index: int):
        import torch
        f = self._files[index]
        return torch.from_numpy(load_image(f.path, self._size)), f.label


def load_image(path: str, size: int):
    """Decodes the image file at ``path`` with PIL to RGB, scales its shorter
    side to ``size`` pixels (bilinear, antialiased) and crops the centre:
    ``uint8 (size, size, 3)``.

    JPEGs are decoded at the smallest DCT scale (1/8 .. 1) whose sides are
    still at least ``size`` (PIL's ``draft``), as shardloader's decoder does,
    so the comparison measures loading, not one decoder shortcut."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as image:
        image.draft("RGB", (size, size))
        image = image.convert("RGB")
    width, height = image.size
    if min(width, height) != size:
        scale = size / min(width, height)
        image = image.resize((max(size, round(width * scale)),
                              max(size, round(height * scale))),
                             Image.BILINEAR)
        width, height = image.size
    left, top = (width - size) // 2, (height - size) // 2
    return np.array(image.crop((left, top, left + size, top + size)))


# ---------------------------------------------------------------- training --

def _run_path(plan: Plan, name: str, passes: type) -> Result:
    """Measures one loader: two passes alone (the first includes starting
    it), then training and evaluation."""
    import torch

    started = time.perf_counter()
    num_train = len(plan.train)
    torch.manual_seed(plan.seed)
    model = _make_model(plan.size, len(plan.folder.classes))
    print(f"[{name}] loader alone: 2 passes over {num_train} train files...",
          flush=True)
    opened = time.perf_counter()
    with passes(plan, "train", shuffle=True) as train_passes:
        cold_s = _time_pass(train_passes(0), began=opened)
        warm_s = _time_pass(train_passes(1))
        stats = train(model, train_passes, epochs=plan.epochs,
                      learning_rate=plan.learning_rate, label=name)
    split = "test" if plan.held_out else "train"
    with passes(plan, split, shuffle=False) as eval_passes:
        accuracy = evaluate(model, eval_passes(0))
    print(f"[{name}] {split} accuracy {100 * accuracy:.1f}%", flush=True)
    return Result(cold_pass_samples_per_s=num_train / cold_s,
                  warm_pass_samples_per_s=num_train / warm_s,
                  train_samples_per_s=stats.samples_per_s,
                  data_wait_fraction=stats.data_wait_fraction,
                  final_train_loss=stats.final_loss, accuracy=accuracy,
                  total_s=time.perf_counter() - started)


def _warm_up(plan: Plan) -> None:
    """Runs one training step on a blank batch, so that torch's one-time
    set-up is not charged to whichever loader runs first."""
    import torch

    model = _make_model(plan.size, len(plan.folder.classes))
    blank = torch.zeros(plan.batch_size, plan.size, plan.size, 3, dtype=torch.uint8)
    train(model, lambda epoch: [(blank, torch.zeros(plan.batch_size, dtype=torch.int64))],
          epochs=1, learning_rate=plan.learning_rate, label=None)
    evaluate(model, [(blank, torch.zeros(plan.batch_size, dtype=torch.int64))])


def _time_pass(batches: Batches, began: float | None = None) -> float:
    """Seconds to draw every batch of a pass, doing nothing with them, from
    ``began`` (a ``time.perf_counter()`` reading; default: now)."""
    began = time.perf_counter() if began is None else began
    for _ in batches:
        pass
    return time.perf_counter() - began


@dataclass
class TrainStats:
    """Training loop totals: ``samples_per_s`` over the loop's wall-clock
    time, ``data_wait_fraction`` (0..1) of that time spent in ``next()`` on
    the batch iterator, ``final_loss`` the mean cross-entropy (nats) of the
    last epoch's samples."""
    samples_per_s: float
    data_wait_fraction: float
    final_loss: float


def train(model, passes: PassFactory, *, epochs: int, learning_rate: float,
          label: str | None) -> TrainStats:
    """Trains ``model`` with Adam on cross-entropy for ``epochs`` passes;
    ``passes(epoch)`` yields (uint8 (B, S, S, 3), int64 (B,)) batches. Prints
    a line per epoch prefixed with ``label`` (none if None)."""
    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    num_samples = 0
    wait_s = loop_s = final_loss = 0.0
    for epoch in range(epochs):
        began = time.perf_counter()
        epoch_wait_s = epoch_loss = 0.0
        epoch_samples = 0
        for images, labels, waited_s in _timed(passes(epoch)):
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_wait_s += waited_s
            epoch_loss += loss.item() * len(labels)
            epoch_samples += len(labels)
        epoch_s = time.perf_counter() - began
        final_loss = epoch_loss / max(1, epoch_samples)
        num_samples += epoch_samples
        wait_s += epoch_wait_s
        loop_s += epoch_s
        if label is not None:
            print(f"[{label}] epoch {epoch + 1}/{epochs}: loss {final_loss:.3f}, "
                  f"{epoch_samples / epoch_s:,.0f} samples/s, "
                  f"{100 * epoch_wait_s / epoch_s:.0f}% waiting for data", flush=True)
    return TrainStats(samples_per_s=num_samples / loop_s,
                      data_wait_fraction=wait_s / loop_s, final_loss=final_loss)


def _timed(batches: Batches) -> Iterator[tuple]:
    """Yields (images, labels, seconds spent getting them) for each batch;
    the first batch's time includes starting the iterator."""
    began = time.perf_counter()
    iterator = iter(batches)
    while True:
        try:
            images, labels = next(iterator)
        except StopIteration:
            return
        now = time.perf_counter()
        yield images, labels, now - began
        began = time.perf_counter()


def evaluate(model, batches: Batches) -> float:
    """Top-1 accuracy (0..1) of ``model`` on (uint8 (B, S, S, 3), int64 (B,))
    batches."""
    import torch

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in batches:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += len(labels)
    return correct / max(1, total)


def _model_name(size: int) -> str:
    return ("MLP (flattened pixels -> 128 -> classes)" if size <= 16 else
            "CNN (4x4/4, 3x3/2, 3x3/2 convs of 16/32/64 channels, average pool, linear)")


def _make_model(size: int, num_classes: int):
    """A small classifier of uint8 (B, size, size, 3) images: an MLP for
    images of side up to 16 pixels, else a 3-layer CNN small enough (about
    0.9 million multiply-adds per 64x64 image) that loading, not the model,
    sets the pace on a few CPU cores. Returns logits float32 (B,
    num_classes)."""
    import torch
    from torch import nn

    class Classifier(nn.Module):
        def __init__(self, body: nn.Module):
            super().__init__()
            self.body = body

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x = images.permute(0, 3, 1, 2).float().div_(255).sub_(0.5)  # (B, 3, S, S)
            return self.body(x)

    if size <= 16:
        body = nn.Sequential(nn.Flatten(), nn.Linear(3 * size * size, 128),
                             nn.ReLU(), nn.Linear(128, num_classes))
    else:
        body = nn.Sequential(
            nn.Conv2d(3, 16, 4, stride=4), nn.ReLU(),                # (B, 16, S/4, S/4)
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),    # (B, 32, S/8, S/8)
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),    # (B, 64, S/16, S/16)
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes))
    return Classifier(body)


# ----------------------------------------------------------------- results --

# (label, unit, Result attribute, scale, format, is a speed: gets a ratio)
_ROWS = [
    ("loader alone, first pass", "samples/s", "cold_pass_samples_per_s", 1, "{:,.0f}", True),
    ("loader alone, second pass", "samples/s", "warm_pass_samples_per_s", 1, "{:,.0f}", True),
    ("training loop", "samples/s", "train_samples_per_s", 1, "{:,.0f}", True),
    ("time waiting for data", "% of loop", "data_wait_fraction", 100, "{:.1f}", False),
    ("final train loss", "nats", "final_train_loss", 1, "{:.3f}", False),
    ("{split} accuracy", "%", "accuracy", 100, "{:.1f}", False),
    ("wall time of all the above", "s", "total_s", 1, "{:.2f}", False),
]


def _table(plan: Plan, results: dict[str, Result]) -> str:
    """The results side by side, with shardloader / naive for speeds."""
    split = "test" if plan.held_out else "train"
    header = ["", "unit", "shardloader", "naive", "ratio"]
    lines = [header]
    for label, unit, attr, scale, fmt, is_speed in _ROWS:
        ours, theirs = (getattr(results[k], attr) * scale for k in ("shardloader", "naive"))
        ratio = f"{ours / theirs:.2f}x" if is_speed and theirs > 0 else ""
        lines.append([label.format(split=split), unit, fmt.format(ours),
                      fmt.format(theirs), ratio])
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                  for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in lines)


def _report(plan: Plan, results: dict[str, Result]) -> dict:
    """The JSON document: data, settings, results (speeds in samples/s,
    fractions 0..1, times in s) and shardloader / naive speed ratios."""
    folder = plan.folder
    return {
        "data": {"source": plan.source, "num_files": len(folder.files),
                 "num_bytes": folder.num_bytes, "num_classes": len(folder.classes),
                 "num_train": len(plan.train), "num_test": len(plan.test),
                 "accuracy_split": "test" if plan.held_out else "train",
                 "num_shards": len(plan.train_shards) + len(plan.test_shards),
                 "shard_bytes": plan.shard_bytes},
        "settings": {"num_cpus": _num_cpus(), "num_workers": plan.num_workers,
                     "image_size": plan.size, "batch_size": plan.batch_size,
                     "epochs": plan.epochs, "seed": plan.seed,
                     "learning_rate": plan.learning_rate,
                     "model": _model_name(plan.size)},
        "results": {name: asdict(result) for name, result in results.items()},
        "ratios": {attr: getattr(results["shardloader"], attr)
                         / getattr(results["naive"], attr)
                   for _, _, attr, _, _, is_speed in _ROWS if is_speed},
    }
