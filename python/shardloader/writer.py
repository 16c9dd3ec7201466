"""Writing shards: ShardWriter."""

from __future__ import annotations

import io
import os
from typing import Mapping

import numpy as np

from . import _core

__all__ = ["ShardWriter"]


def _encode(value) -> bytes:
    """Field value -> bytes: bytes as is, str as UTF-8, int as decimal text
    (WebDataset's ``.cls``), NumPy arrays as ``.npy``."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value)).encode("ascii")
    if isinstance(value, np.ndarray):
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        return buffer.getvalue()
    raise TypeError(f"cannot write a field of type {type(value).__name__}; "
                    "give bytes, str, int or a NumPy array")


class ShardWriter:
    """Packs samples into numbered tar shards in the WebDataset layout.

    Args:
        pattern: output path with a number placeholder, printf-style
            (``"out/train-%06d.tar"``) or an open brace range
            (``"out/train-{000000..}.tar"``); a local path or ``s3://``
            (multipart upload: an object appears only when complete).
        max_size_bytes: start a new shard before one would exceed this size.
        max_count: start a new shard after this many samples.
        first_shard_index: number of the first shard.
        index_path: where to write the JSON index (shard names, sample
            counts, sizes in bytes, SHA-256); default ``index.json`` beside
            the shards.
        destination: :class:`SourceOptions` for ``s3://`` output (endpoint,
            region, profile, part size); credentials come from the usual
            AWS variables and files.

    Each shard is followed by its sample index (``.idx``). Each shard is written to a temporary name and renamed when complete.
    Use as a context manager, or call :meth:`close`; leaving the ``with``
    block through an exception removes the unfinished shard (:meth:`abort`).

    Raises:
        InvalidArgumentError: a bad pattern, key or field extension.
        NotFoundError: the output directory does not exist.
    """

    def __init__(self, pattern: str | os.PathLike, *, max_size_bytes: int = 1 << 30,
                 max_count: int = 100_000, first_shard_index: int = 0,
                 index_path: str | os.PathLike | None = None,
                 destination: _core.SourceOptions | None = None):
        self._writer = _core.ShardWriter(
            os.fspath(pattern), max_size_bytes, max_count, first_shard_index,
            os.fspath(index_path) if index_path is not None else "",
            destination if destination is not None else _core.SourceOptions())

    def write(self, sample: Mapping[str, object]) -> None:
        """Writes one sample: ``{"__key__": key, extension: value, ...}``.

        Values may be bytes, str (UTF-8), int (decimal text, as ``.cls``) or
        NumPy arrays (``.npy``). Keys starting with ``__`` other than
        ``__key__`` are ignored, as by WebDataset's writer."""
        key = sample["__key__"]
        fields = [(ext, _encode(value)) for ext, value in sample.items()
                  if not ext.startswith("__")]
        self._writer.write(str(key), fields)

    def close(self) -> None:
        """Finishes the last shard and writes the index. Idempotent."""
        self._writer.close()

    @property
    def shards(self) -> list:
        """Finished shards: ``.path``, ``.num_samples``, ``.size_bytes``,
        ``.sha256``."""
        return self._writer.shards

    @property
    def index_path(self) -> str:
        return self._writer.index_path

    def __enter__(self) -> "ShardWriter":
        return self

    def abort(self) -> None:
        """Removes the unfinished shard (finished ones stay); no index."""
        self._writer.abort()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
