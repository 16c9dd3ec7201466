"""The Loader: an iterable of training batches read from tar shards."""

from __future__ import annotations

import logging
import os
import time
from typing import Iterator, Mapping, Sequence

import numpy as np

from . import _core
from .fields import Field, Ragged, Text

__all__ = ["Loader"]

_log = logging.getLogger("shardloader")


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


class Loader:
    """Streams batches of decoded samples from tar shards (WebDataset layout).

    Args:
        urls: shard path(s): a path, a brace pattern such as
            ``"train-{000000..000127}.tar"``, a directory of ``.tar`` files,
            ``"::"``-joined specs, or a list of any of these.
        fields: batch key -> :mod:`shardloader.fields` declaration, e.g.
            ``{"image": Image("jpg", size=224), "label": Int("cls")}``.
        batch_size: samples per batch (per rank).
        shuffle: shuffle (seeded) every epoch: shards are permuted, then
            samples are shuffled within windows of ``window_shards`` shards.
        seed: seed of every random choice. An epoch's global sample order
            depends only on (seed, epoch, shuffle, window_shards) and the
            shards: never on the world size or thread counts.
        window_shards: shards whose samples are shuffled together; reads
            touch about this many shards at a time.
        rank, world_size: this process's place in distributed training;
            default from the ``RANK`` / ``WORLD_SIZE`` environment (torchrun),
            else 0 and 1. The global order is dealt by global batch (rank r
            takes the r-th ``batch_size`` samples of every ``world_size *
            batch_size``), so every rank gets the same number of batches.
        remainder: ``"pad"`` (default) repeats samples from the epoch's start
            so the samples divide evenly among the ranks (as
            DistributedSampler pads); ``"drop"`` leaves the last
            ``N mod world_size`` out.
        drop_last: drop the epoch's last, smaller batch (on every rank).
        on_error: ``"raise"`` (default): a sample that cannot be read or
            decoded ends the epoch with its error. ``"skip"``: it is replaced
            by another sample chosen from (seed, epoch, its position), so
            batch counts and resumes stay exact; each skip is counted in
            :meth:`stats` and logged once (logger ``"shardloader"``, WARNING).
        max_errors: with ``"skip"``, the skips allowed per epoch: an int
            (a count) or a float in [0, 1] (a fraction of this rank's
            samples). One more raises.
        num_threads: decode threads; 0 uses the CPUs this process may run on.
        epoch: the first epoch (see :meth:`set_epoch`).
        worker, num_workers: DataLoader worker split within this rank (worker
            k takes every num_workers-th of the rank's batches, from k).
        output: ``"torch"`` (tensors; the default when torch is installed) or
            ``"numpy"`` (arrays).
        pin_memory: page-lock batch memory with CUDA when a CUDA runtime and
            device are present, so ``batch[k].cuda(non_blocking=True)`` is
            an asynchronous copy (``batch[k].is_pinned()`` is then True);
            ordinary memory otherwise.
        log_every_s: while iterating, log :meth:`stats` as one line to the
            ``"shardloader"`` logger (level INFO) at most this often, in
            seconds; None (the default) never logs.
        num_io_threads: threads reading samples.
        source: how shards are opened and read (:class:`SourceOptions`: S3
            endpoint, region, profile, retries, timeouts, the local
            ``cache_dir`` and ``cache_limit_bytes``...); see the README's
            "Remote shards".
        prefetch_batches: batches decoded ahead of the consumer.

    Each batch is a ``dict``: one entry per field (see
    :mod:`shardloader.fields` for shapes and dtypes) plus ``"__key__"``, the
    sample keys. Tensors are zero-copy views of the loader's batch memory,
    which returns to its pool when they are freed.

    Raises:
        InvalidArgumentError: bad options (at construction).
        NotFoundError, DataLossError, ...: while iterating, naming the shard,
            byte offset and sample key (``.uri``, ``.offset``, ``.key``).
    """

    def __init__(self, urls: str | os.PathLike | Sequence[str | os.PathLike],
                 fields: Mapping[str, Field], *, batch_size: int = 1,
                 shuffle: bool = True, seed: int = 0, rank: int | None = None,
                 world_size: int | None = None, num_threads: int = 0,
                 drop_last: bool = False, window_shards: int = 8,
                 remainder: str = "pad", on_error: str = "raise",
                 max_errors: int | float = 0,
                 epoch: int = 0, worker: int = 0, num_workers: int = 1,
                 output: str | None = None, num_io_threads: int = 2,
                 prefetch_batches: int = 2,
                 pin_memory: bool = True, log_every_s: float | None = None,
                 source: _core.SourceOptions | None = None):
        if isinstance(urls, (str, os.PathLike)):
            urls = [urls]
        if output is None:
            output = "torch" if _torch_available() else "numpy"
        _check_choice("output", output, ("torch", "numpy"))
        _check_choice("remainder", remainder, ("pad", "drop"))
        _check_choice("on_error", on_error, ("raise", "skip"))
        self._output = output
        self._log_every_s = log_every_s
        self._skip = on_error == "skip"
        self._skips_logged = 0
        self._fields = dict(fields)
        options = _core.LoaderOptions()
        options.shards = [os.fspath(u) for u in urls]
        options.fields = [field.spec(name) for name, field in self._fields.items()]
        options.batch_size = batch_size
        options.shuffle = shuffle
        options.seed = seed
        options.rank = rank
        options.world_size = world_size
        options.num_threads = num_threads
        options.drop_last = drop_last
        options.window_shards = window_shards
        options.remainder = _core.Remainder.PAD if remainder == "pad" else _core.Remainder.DROP
        options.on_error = _core.OnError.SKIP if self._skip else _core.OnError.RAISE
        if isinstance(max_errors, float):
            options.max_error_fraction = max_errors
        else:
            options.max_errors = max_errors
        options.epoch = epoch
        options.worker = worker
        options.num_workers = num_workers
        options.num_io_threads = num_io_threads
        options.prefetch_batches = prefetch_batches
        options.pin_memory = pin_memory
        if source is not None:
            options.source = source
        self._core = _core.Loader(options)
        for warning in self._core.shard_warnings:
            _log.warning("shardloader: %s", warning)

    def __iter__(self) -> Iterator[dict]:
        """Iterates the current epoch from its beginning, or from the
        position :meth:`load_state_dict` set."""
        self._core.restart()
        last_log = time.monotonic()
        while True:
            raw = self._core.next()
            if self._skip:
                self._log_skips()
            if raw is None:
                return
            if self._log_every_s is not None and \
                    time.monotonic() - last_log >= self._log_every_s:
                last_log = time.monotonic()
                _log.info("%s", self._core.stats().summary())
            yield self._convert(raw)

    def state_dict(self) -> dict:
        """Where this loader stands: the epoch and the position in the
        epoch's global order after the batches yielded so far (as
        torchdata's ``StatefulDataLoader`` protocol). Small and
        JSON-serialisable; holds no sample data. Every rank of a job at the
        same step has the same state, so rank 0's is enough."""
        state = self._core.state()
        return {"format": "shardloader.loader_state", "version": 1,
                "epoch": state.epoch, "position": state.position,
                "num_samples": state.num_samples, "seed": state.seed,
                "shuffle": state.shuffle, "window_shards": state.window_shards}

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Continues from ``state_dict``: the next iteration yields exactly
        the batches an uninterrupted run would have yielded next, reading
        none of the samples before it. The world size may differ from the
        saved run's: the same global order continues, no sample lost or
        repeated. A ``set_epoch(state["epoch"])`` before iterating keeps the
        position.

        Raises:
            InvalidArgumentError: the state is not a shardloader state, or
                it belongs to another dataset, seed, shuffle or window.
        """
        if state_dict.get("format") != "shardloader.loader_state" or \
                state_dict.get("version") != 1:
            from .errors import InvalidArgumentError
            raise InvalidArgumentError("not a shardloader.loader_state, version 1")
        state = _core.LoaderState()
        for name in ("epoch", "position", "num_samples", "seed", "shuffle",
                     "window_shards"):
            setattr(state, name, state_dict[name])
        self._core.resume(state)

    def __len__(self) -> int:
        """Batches this rank/worker yields in the current epoch."""
        return self._core.num_batches()

    def num_samples(self) -> int:
        """Samples this rank/worker reads in the current epoch."""
        return self._core.num_samples()

    def stats(self):
        """What the loader has done so far, over all epochs: attributes
        ``num_shards_opened``, ``num_samples_read``, ``num_bytes_read``,
        ``num_batches``, ``num_samples_decoded``, ``num_errors``,
        ``num_skipped`` and ``skipped`` (the first 1000 skipped samples:
        ``.uri``, ``.offset``, ``.key``, ``.error``),
        ``read_busy_s`` / ``decode_busy_s`` (seconds of thread time spent
        reading and parsing / decoding and assembling), ``consumer_wait_s``
        (seconds the iterating thread waited for batches),
        ``ready_queue_depth`` (batches ready now), ``batch_slots_created``;
        ``summary()`` gives one line for logs."""
        return self._core.stats()

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch the next iteration runs (shard order, shuffle)."""
        self._core.set_epoch(epoch)

    @property
    def epoch(self) -> int:
        return self._core.epoch

    @property
    def shards(self) -> list[str]:
        """All shards, resolved from ``urls``, before any split."""
        return self._core.shards

    @property
    def rank(self) -> int:
        return self._core.rank

    @property
    def world_size(self) -> int:
        return self._core.world_size

    def close(self) -> None:
        """Stops the loader's threads; iterating afterwards raises."""
        self._core.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _log_skips(self) -> None:
        stats = self._core.stats()
        for skipped in stats.skipped[self._skips_logged:]:
            _log.warning("shardloader: skipped sample %r of %s at offset %d: %s",
                         skipped.key, skipped.uri, skipped.offset, skipped.error)
        self._skips_logged = len(stats.skipped)

    def _convert(self, raw) -> dict:
        _, fields, keys = raw
        wrap = _to_torch if self._output == "torch" else (lambda a: a)
        batch = {}
        for name, values, offsets in fields:
            if offsets is None:
                batch[name] = wrap(values)
            elif isinstance(self._fields[name], Text):
                batch[name] = _decode_text(values, offsets)
            else:
                batch[name] = Ragged(wrap(values), wrap(offsets))
        batch["__key__"] = keys
        return batch


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"{name} must be one of {choices}, got {value!r}")


def _to_torch(array: np.ndarray):
    import torch
    return torch.from_numpy(array)


def _decode_text(values: np.ndarray, offsets: np.ndarray) -> list[str]:
    data = values.tobytes()
    bounds = offsets.tolist()
    return [data[bounds[i]:bounds[i + 1]].decode("utf-8")
            for i in range(len(bounds) - 1)]
