"""Process exit and Ctrl-C with Loaders at work (issue 16): no hang, no crash.

Each case runs in its own interpreter: exit with Loaders mid-epoch and their
threads busy (or blocked in a read that never returns), interpreter shutdown
with live Loaders, and SIGINT in every wait of the API, which must surface as
KeyboardInterrupt within a couple of seconds however long the wait would
have been. Only hang timeouts are asserted, and they are generous.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import make_jpeg_shards
from process_util import read_until

EXIT_TIMEOUT_S = 60
# KeyboardInterrupt is expected within a couple of seconds of SIGINT; the
# test waits much longer before calling it a hang.
INTERRUPT_TIMEOUT_S = 20


@pytest.fixture(scope="module")
def busy_shards(tmp_path_factory) -> list[str]:
    """8 shards of 40 small JPEGs: enough decode work to keep threads busy."""
    return make_jpeg_shards(tmp_path_factory.mktemp("busy"), num_samples=320, per_shard=40)


def _unblock_fifo(fifo) -> None:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


# ---------------------------------------------------------------------------
# Exit and interpreter shutdown

EXIT_SCRIPT = textwrap.dedent("""
    import os, sys, threading
    import shardloader as sl

    ending, fifo, shards = sys.argv[1], sys.argv[2], sys.argv[3:]
    fields = {"image": sl.Image("jpg", size=32), "cls": sl.Int("cls")}
    loaders = [sl.Loader(shards, fields=fields, batch_size=4, num_threads=2,
                         num_io_threads=4, prefetch_batches=8, seed=s) for s in range(3)]
    iterators = [iter(loader) for loader in loaders]
    for iterator in iterators:
        next(iterator)  # every loader mid-epoch, its threads refilling
    # One more, whose read never returns (a FIFO nobody writes).
    blocked = sl.Loader([fifo], fields={"cls": sl.Int("cls")}, batch_size=2)
    threading.Thread(target=lambda: list(blocked), daemon=True).start()
    # And one iterated by a daemon thread until the very end.
    spinning = sl.Loader(shards, fields=fields, batch_size=4, num_threads=2)
    def spin():
        while True:
            for _ in spinning:
                pass
    threading.Thread(target=spin, daemon=True).start()
    print("mid-epoch", flush=True)
    if ending == "return":
        pass  # the interpreter shuts down with every Loader alive
    elif ending == "sys_exit":
        sys.exit(0)
    elif ending == "exception":
        raise RuntimeError("the training loop failed")
    elif ending == "close_then_exit":
        for loader in loaders:
            loader.close()
        sys.exit(0)
    elif ending == "del_then_exit":
        del iterators, loaders
        import gc
        gc.collect()
    else:
        raise SystemExit(f"unknown ending {ending}")
""")


@pytest.mark.parametrize("ending",
                         ["return", "sys_exit", "exception", "close_then_exit", "del_then_exit"])
def test_exit_with_loaders_mid_epoch(busy_shards, tmp_path, ending):
    fifo = tmp_path / "never-written-000.tar"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT, ending, str(fifo), *busy_shards],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _unblock_fifo(fifo)
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the process did not exit within {EXIT_TIMEOUT_S} s ({ending}): "
                    f"shutdown waits for a Loader thread?\nstdout: {out}\nstderr: {err[-2000:]}")
    assert "mid-epoch" in out, err
    if ending == "exception":
        assert proc.returncode == 1, f"exit code {proc.returncode}\nstderr: {err[-2000:]}"
        assert "RuntimeError: the training loop failed" in err
    else:
        assert proc.returncode == 0, f"exit code {proc.returncode}\nstderr: {err[-2000:]}"
        assert err == "", err[-2000:]


# ---------------------------------------------------------------------------
# Ctrl-C in every wait

SIGINT_SCRIPT = textwrap.dedent("""
    import sys, time
    import shardloader as sl

    wait, shards = sys.argv[1], sys.argv[2:]
    loader = sl.Loader(shards, fields={"cls": sl.Int("cls")}, batch_size=2, shuffle=False,
                       num_threads=2)
    state = {"format": "shardloader.loader_state", "version": 1, "epoch": 0,
             "position": 0, "num_samples": 1, "seed": 0, "shuffle": False,
             "window_shards": 8}
    actions = {
        "iterate": lambda: [None for _ in loader],
        "iterate_busy": lambda: [None for _ in range(10**6) for _ in loader],
        "len": lambda: len(loader),
        "num_samples": loader.num_samples,
        "state_dict": loader.state_dict,
        "load_state_dict": lambda: loader.load_state_dict(state),
    }
    print("ready", flush=True)
    try:
        actions[wait]()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
    print("finished", flush=True)
""")



@pytest.fixture
def silent_server():
    """A TCP port that takes connections and never answers: a request to it
    waits (on libcurl's thread, not the caller's) for curl's low-speed
    timeout, 30 s by default, then retries."""
    server = socket.create_server(("127.0.0.1", 0), backlog=64)
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.mark.parametrize("blocker", ["fifo", "silent_server"])
@pytest.mark.parametrize("wait", ["iterate", "iterate_busy", "len", "num_samples", "state_dict",
                                  "load_state_dict"])
def test_ctrl_c_in_every_wait(busy_shards, tmp_path, silent_server, wait, blocker):
    """The waits block on a shard that never arrives: on a FIFO that nobody
    writes (counting the samples reads its headers; the open() blocks in the
    waiting thread itself), or on a server that never answers (the waiting
    thread sleeps while libcurl's thread waits). ``iterate_busy`` iterates
    busy real shards for ever instead. SIGINT must raise KeyboardInterrupt
    in each, and the process must then exit with every Loader thread still
    busy or blocked."""
    if wait == "iterate_busy" and blocker != "fifo":
        pytest.skip("iterate_busy blocks on nothing")
    fifo = tmp_path / "never-written-000.tar"
    os.mkfifo(fifo)
    blocking = str(fifo) if blocker == "fifo" else f"{silent_server}/stalled-000.tar"
    shards = busy_shards if wait == "iterate_busy" else [busy_shards[0], blocking]
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_SCRIPT, wait, *shards],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out_fd = proc.stdout.fileno()
    try:
        out = read_until(out_fd, b"ready\n", time.monotonic() + EXIT_TIMEOUT_S)
        assert b"ready" in out, f"the script did not start: {out!r}"
        time.sleep(1.0)  # well inside the wait
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out += read_until(out_fd, b"interrupted", sent + INTERRUPT_TIMEOUT_S)
        interrupted = b"interrupted" in out
        try:
            proc.wait(timeout=max(0.1, sent + INTERRUPT_TIMEOUT_S - time.monotonic()))
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
    finally:
        if proc.poll() is None:
            _unblock_fifo(fifo)
            proc.kill()
    rest, err = proc.communicate()
    out += rest
    err = err.decode(errors="replace")
    assert b"finished" not in out, f"{wait} returned instead of blocking: {out!r}"
    assert interrupted, (
        f"SIGINT during {wait} did not raise KeyboardInterrupt within "
        f"{INTERRUPT_TIMEOUT_S} s (a wait that does not poll for signals?)\n"
        f"stdout: {out!r}\nstderr tail: {err[-1000:]!r}")
    assert exited, (f"KeyboardInterrupt was raised in {wait}, but the process did not exit "
                    f"within {INTERRUPT_TIMEOUT_S} s of SIGINT\nstderr tail: {err[-1000:]!r}")
    assert proc.returncode != 0 and proc.returncode != -signal.SIGKILL
    assert "KeyboardInterrupt" in err
    assert "Fatal Python error" not in err and "terminate called" not in err, err[-2000:]
