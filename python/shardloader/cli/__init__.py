"""The ``shardloader`` command: pack, index, inspect, demo."""

from __future__ import annotations

import argparse
import sys

from . import demo, index, inspect, pack

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="shardloader",
        description="Pack many small files into tar shards and stream them "
                    "back at full speed.")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in (pack, index, inspect, demo):
        module.register(commands)
    args = parser.parse_args(argv)
    try:
        return args.run(args) or 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
