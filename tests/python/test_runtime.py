"""Threads, signals and processes: the GIL is released while waiting, Ctrl-C
stops a blocked iteration, and a Loader used after fork() fails clearly."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import shardloader as sl
from conftest import loader_keys
from process_util import read_until

PROCESS_TIMEOUT_S = 20


def _unblock_fifo(fifo) -> None:
    """Gives a reader blocked on ``fifo`` an end of file, if one is waiting."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return  # no reader has it open
    os.close(fd)


def _run_python(code: str, *args, timeout=60):
    return subprocess.run([sys.executable, "-c", code, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------
# The GIL

GIL_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    import shardloader as sl

    shard, fifo = sys.argv[1], sys.argv[2]
    data = open(shard, "rb").read()
    counter = 0
    iterating = threading.Event()
    stop = False

    def count():
        global counter
        while not stop:
            counter += 1
            time.sleep(0.001)

    def write():
        # The shard's bytes arrive only after the counter thread has run
        # while the main thread waits inside the loader: if the loader held
        # the GIL while waiting, nothing would ever arrive.
        iterating.wait()
        start = counter
        while counter < start + 100:
            time.sleep(0.001)
        with open(fifo, "wb") as f:
            f.write(data)

    threads = [threading.Thread(target=count, daemon=True),
               threading.Thread(target=write, daemon=True)]
    for t in threads:
        t.start()
    loader = sl.Loader(fifo, fields={"cls": sl.Int("cls")}, batch_size=5, shuffle=False)
    iterator = iter(loader)
    before = counter
    iterating.set()
    n = sum(len(b["__key__"]) for b in iterator)
    print(n, counter - before, flush=True)
    stop = True
""")


def test_gil_released_while_waiting(tmp_path):
    # A small shard (a few KiB): it passes through the pipe in one piece, so
    # the test needs no seeking (a FIFO cannot seek).
    with sl.ShardWriter(str(tmp_path / "tiny-%03d.tar")) as writer:
        for i in range(25):
            writer.write({"__key__": f"k{i:04d}", "cls": i})
    shard = writer.shards[0].path
    assert os.path.getsize(shard) < 32 * 1024
    fifo = tmp_path / "slow-000.tar"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-c", GIL_SCRIPT, shard, str(fifo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("iteration never finished: the Python thread that supplies the "
                    "shard could not run while the loader waited (GIL held?)\n" + err)
    assert proc.returncode == 0, err
    samples, progress = map(int, out.split())
    assert samples == 25
    assert progress >= 100


def test_gil_released_in_process(jpeg_shards):
    """A Python thread keeps counting while the main thread iterates (decoding
    real JPEGs); its progress is measured only inside the loader's calls."""
    import threading

    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0.0005)

    old_interval = sys.getswitchinterval()
    # A long switch interval: the counting thread (which sleeps between
    # increments) then runs only when the main thread gives up the GIL.
    sys.setswitchinterval(1.0)
    thread = threading.Thread(target=count, daemon=True)
    thread.start()
    try:
        loader = sl.Loader(jpeg_shards, fields={"image": sl.Image("jpg", size=64)},
                           batch_size=8, shuffle=False, num_threads=1, prefetch_batches=1)
        iterator = iter(loader)
        inside = 0
        samples = 0
        while True:
            before = counter[0]
            try:
                batch = next(iterator)
            except StopIteration:
                break
            inside += counter[0] - before
            samples += len(batch["__key__"])
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old_interval)
    assert samples == 160
    assert inside > 0, "no Python thread ran while the loader was producing batches"


# ---------------------------------------------------------------------------
# Ctrl-C

SIGINT_SCRIPT = textwrap.dedent("""
    import sys
    import shardloader as sl

    loader = sl.Loader(sys.argv[1:], fields={"cls": sl.Int("cls")}, batch_size=2,
                       shuffle=False)
    iterator = iter(loader)
    if len(sys.argv) > 2:
        next(iterator)  # the first shard is a good one
    print("ready", flush=True)
    try:
        for batch in iterator:
            pass
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
    print("finished", flush=True)
""")



@pytest.mark.parametrize("layout", ["first_shard_blocks", "second_shard_blocks"])
def test_ctrl_c_stops_a_blocked_iteration(keyed_shards, tmp_path, layout):
    """A shard on a FIFO that nobody writes blocks the read forever: SIGINT
    must still raise KeyboardInterrupt and let the process exit. The loader
    counts every shard's samples before the first batch, so in the second
    layout the FIFO has an index file: it is counted from that, and its
    sample read blocks after the first shard's batches."""
    fifo = tmp_path / "never-written-000.tar"
    os.mkfifo(fifo)
    if layout == "second_shard_blocks":
        (tmp_path / "never-written-000.idx").write_text("v1.2 1\ncls 512 1 k.cls\n")
    shards = [str(fifo)] if layout == "first_shard_blocks" else [keyed_shards[0], str(fifo)]
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_SCRIPT, *shards],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out_fd = proc.stdout.fileno()
    try:
        out = read_until(out_fd, b"ready\n", time.monotonic() + 60)
        assert b"ready" in out, f"the script did not start: {out!r}"
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + PROCESS_TIMEOUT_S
        out += read_until(out_fd, b"interrupted", deadline)
        interrupted = b"interrupted" in out
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
        if not exited:
            _unblock_fifo(fifo)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        rest, err = proc.communicate()
        out += rest
        err = err.decode(errors="replace")
        assert interrupted, (
            f"SIGINT did not interrupt the blocked iteration within {PROCESS_TIMEOUT_S} s "
            f"(KeyboardInterrupt never reached Python: a wait that does not poll for "
            f"signals?)\nstdout: {out!r}\nstderr tail: {err[-500:]!r}")
        assert exited, (
            f"KeyboardInterrupt reached Python, but the process did not exit within "
            f"{PROCESS_TIMEOUT_S} s of SIGINT (it exited only once the FIFO got a writer: "
            f"shutdown waits for a thread blocked reading the shard?)\n"
            f"stderr tail: {err[-500:]!r}")
    finally:
        if proc.poll() is None:
            _unblock_fifo(fifo)
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err


# ---------------------------------------------------------------------------
# fork()

def _iterate_in_forked_child(loader, action="iterate", timeout=PROCESS_TIMEOUT_S) -> str:
    """Forks; the child runs ``action`` on ``loader`` and reports through a
    pipe. Returns the child's report, or a description of how it died."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        try:
            if action == "iterate":
                for _ in loader:
                    pass
                message = "no error"
            elif action == "delete":
                import gc
                del loader
                gc.collect()
                message = "deleted"
            else:
                message = f"unknown action {action}"
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            message = f"{type(error).__name__}: {error}"
        os.write(write_fd, message.encode())
        os._exit(0)
    os.close(write_fd)
    try:
        ready, _, _ = select.select([read_fd], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return f"child hung for {timeout} s"
        chunks = []
        while chunk := os.read(read_fd, 4096):
            chunks.append(chunk)
        report = b"".join(chunks).decode()
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"child killed by signal {os.WTERMSIG(status)} ({report!r})"
    return report


def test_fork_before_first_iteration(keyed_shards):
    loader = sl.Loader(keyed_shards, fields={"cls": sl.Int("cls")}, batch_size=16)
    report = _iterate_in_forked_child(loader)
    assert report.startswith("FailedPreconditionError:"), report
    assert "fork" in report
    assert len(loader_keys(loader)) == 200  # the parent's loader still works


def test_fork_during_iteration(keyed_shards):
    loader = sl.Loader(keyed_shards, fields={"cls": sl.Int("cls")}, batch_size=16)
    iterator = iter(loader)
    first = next(iterator)  # the parent's threads are running
    report = _iterate_in_forked_child(loader)
    assert report.startswith("FailedPreconditionError:"), report
    rest = [k for b in iterator for k in b["__key__"]]
    assert sorted(first["__key__"] + rest) == [f"k{i:04d}" for i in range(200)]


def test_fork_child_can_drop_the_loader(keyed_shards):
    loader = sl.Loader(keyed_shards, fields={"cls": sl.Int("cls")}, batch_size=16)
    iterator = iter(loader)
    next(iterator)
    report = _iterate_in_forked_child(loader, action="delete")
    assert report == "deleted"
    assert sum(len(b["__key__"]) for b in iterator) == 200 - 16


def test_loader_in_child_process_works(keyed_shards):
    """The supported pattern: create the Loader in the process that uses it."""
    code = textwrap.dedent("""
        import sys
        import shardloader as sl
        loader = sl.Loader(sys.argv[1:], fields={"cls": sl.Int("cls")}, batch_size=16)
        print(sum(len(b["__key__"]) for b in loader))
    """)
    result = _run_python(code, *keyed_shards)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "200"
