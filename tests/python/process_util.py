"""Helpers for tests that drive a child process through a pipe."""
from __future__ import annotations

import os
import select
import time


def read_until(fd: int, marker: bytes, deadline: float) -> bytes:
    """Reads ``fd`` until ``marker`` appears, EOF, or ``deadline``
    (time.monotonic() seconds); returns what was read."""
    data = b""
    while marker not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data
