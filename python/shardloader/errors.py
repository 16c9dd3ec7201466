"""Exceptions raised by shardloader.

Every error of the C++ engine arrives as one class per error kind (the
``absl::StatusCode`` of the C++ API), and each class is also the matching
Python builtin, so ``except FileNotFoundError`` catches a missing shard.
Each exception carries where it happened:

- ``code``: the ``absl::StatusCode`` number (``int``)
- ``uri``: the shard's path or URI, or ``None``
- ``offset``: the byte offset within the shard (``int``), or ``None``
- ``key``: the sample key, or ``None``

The hierarchy follows pyarrow's ``error.pxi`` in spirit.
"""

from __future__ import annotations

__all__ = [
    "ShardloaderError",
    "CancelledError",
    "UnknownError",
    "InvalidArgumentError",
    "DeadlineExceededError",
    "NotFoundError",
    "AlreadyExistsError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "FailedPreconditionError",
    "AbortedError",
    "OutOfRangeError",
    "UnimplementedError",
    "InternalError",
    "UnavailableError",
    "DataLossError",
    "UnauthenticatedError",
    "error_class_for_code",
]


class ShardloaderError(Exception):
    """Base class of every shardloader error."""

    code: int = 2  # absl::StatusCode::kUnknown

    def __init__(self, message: str = "", *, uri: str | None = None,
                 offset: int | None = None, key: str | None = None):
        super().__init__(message)
        self.uri = uri
        self.offset = offset
        self.key = key

    def __reduce__(self):
        # Keeps .uri/.offset/.key across pickling (multiprocessing workers).
        return (_rebuild, (type(self), str(self), self.uri, self.offset, self.key))

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _rebuild(cls, message, uri, offset, key):
    return cls(message, uri=uri, offset=offset, key=key)


class CancelledError(ShardloaderError):
    code = 1


class UnknownError(ShardloaderError, RuntimeError):
    code = 2


class InvalidArgumentError(ShardloaderError, ValueError):
    """A bad option or argument."""
    code = 3


class DeadlineExceededError(ShardloaderError, TimeoutError):
    code = 4


class NotFoundError(ShardloaderError, FileNotFoundError):
    """A shard or directory does not exist."""
    code = 5


class AlreadyExistsError(ShardloaderError, FileExistsError):
    code = 6


class PermissionDeniedError(ShardloaderError, PermissionError):
    code = 7


class ResourceExhaustedError(ShardloaderError, RuntimeError):
    code = 8


class FailedPreconditionError(ShardloaderError, RuntimeError):
    """The object cannot be used in its state (closed, used after fork())."""
    code = 9


class AbortedError(ShardloaderError, RuntimeError):
    code = 10


class OutOfRangeError(ShardloaderError, IndexError):
    code = 11


class UnimplementedError(ShardloaderError, NotImplementedError):
    code = 12


class InternalError(ShardloaderError, RuntimeError):
    code = 13


class UnavailableError(ShardloaderError, ConnectionError):
    """A transient I/O failure: worth retrying."""
    code = 14


class DataLossError(ShardloaderError, OSError):
    """Corrupt or truncated data: a malformed shard, sample or field."""
    code = 15


class UnauthenticatedError(ShardloaderError, PermissionError):
    code = 16


_BY_CODE = {cls.code: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
    NotFoundError, AlreadyExistsError, PermissionDeniedError,
    ResourceExhaustedError, FailedPreconditionError, AbortedError,
    OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}


def error_class_for_code(code: int) -> type[ShardloaderError]:
    """The exception class for an ``absl::StatusCode`` number."""
    return _BY_CODE.get(code, UnknownError)
