"""The ``shardloader`` command: pack, index, inspect, demo.

Expected errors are one line on stderr that names the input and the fix:
exit code 2 for bad usage (an unknown option, a bad pattern or size), 1
for a failure (a missing path, an unwritable folder, a bad shard). With
``--debug`` the traceback is printed too.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from . import demo, index, inspect, pack
from .common import CommandError

__all__ = ["main", "CommandError"]


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line: the message, a suggestion for a misspelled
    option, and this (sub)command's usage."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments:"):
            message = self._unrecognized(message.split(":", 1)[1].split())
        usage = " ".join(self.format_usage().split())
        self.exit(2, f"{self.prog}: {message}; {usage} (see {self.prog} --help)\n")

    def _unrecognized(self, words: list[str]) -> str:
        options = [o for action in self._actions for o in action.option_strings]
        parts = []
        for word in words:
            close = (difflib.get_close_matches(word.split("=")[0], options, n=1)
                     if word.startswith("-") else [])
            parts.append(f"{word} (did you mean {close[0]}?)" if close else word)
        return "unknown option or argument " + ", ".join(parts)


def _common_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # SUPPRESS: given before or after the command, either counts.
    default = False if top else argparse.SUPPRESS
    parser.add_argument("--quiet", "-q", action="store_true", default=default,
                        help="print nothing but errors (for scripts)")
    parser.add_argument("--debug", action="store_true", default=default,
                        help="on an error, print the traceback too")


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(
        prog="shardloader",
        description="Pack many small files into tar shards and stream them "
                    "back at full speed.")
    parser.add_argument("--version", action="version",
                        version=f"shardloader {__version__}")
    _common_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True,
                                     parser_class=_Parser, metavar="command")
    for module in (pack, index, inspect, demo):
        module.register(commands)
    for sub in commands.choices.values():
        _common_options(sub, top=False)
    parser.set_defaults(_commands=commands.choices)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:  # the command's own usage, not the top-level one
        args._commands[args.command].error("unrecognized arguments: " + " ".join(extras))
    prog = f"shardloader {args.command}"
    try:
        return args.run(args) or 0
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001: one clear line, non-zero exit
        if args.debug:
            raise
        code = error.code if isinstance(error, CommandError) else 1
        print(f"{prog}: {_one_line(error)}", file=sys.stderr)
        return code


def _one_line(error: BaseException) -> str:
    from ..errors import ShardloaderError

    if isinstance(error, (CommandError, ShardloaderError)):
        text = str(error)
    elif isinstance(error, OSError) and error.filename is not None:
        text = f"{error.filename}: {error.strerror or error}"
    else:
        text = f"{type(error).__name__}: {error} (rerun with --debug for the traceback)"
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
