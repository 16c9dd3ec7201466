"""What the commands share: their expected errors and shard specs."""

from __future__ import annotations

import argparse
import sys

from .. import _core
from ..errors import InvalidArgumentError


class CommandError(Exception):
    """An expected failure of a command: its message is the one line printed
    (it names the input and the fix); ``code`` is the exit status (2: bad
    usage, 1: a failure)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def resolve_specs(specs: list[str], *, quiet: bool = False) -> list[str]:
    """The shards ``specs`` name, resolved as :class:`shardloader.Loader`
    resolves them (brace patterns, folders and their index.json, ``::``
    lists, ``s3://`` prefixes); warnings go to stderr unless ``quiet``.

    Raises:
        CommandError: code 2 for a malformed brace pattern.
        ShardloaderError: a missing folder, no shard at all, a bad index."""
    for spec in specs:
        for part in spec.split("::"):
            try:
                _core.expand_braces(part)
            except InvalidArgumentError as error:
                raise CommandError(f"{error}: fix the shard pattern", code=2) from error
    shards, warnings = _core.resolve_shards_with_warnings(specs)
    if not quiet:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return shards


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    return _whole_number(text, 0)
