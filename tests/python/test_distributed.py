"""Issue 5: equal work per rank, exact mid-epoch resume, skip-and-replace.

The distributed test runs real torchrun (``torch.distributed.run``) with two
processes and the gloo backend on loopback; the others run ranks in-process
(a Loader with ``rank=`` / ``world_size=`` is exactly what each torchrun
process builds).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import shardloader as sl

FIELDS = {"cls": sl.Int("cls")}


def write_shards(directory, num_samples, per_shard, make=None):
    directory.mkdir(parents=True, exist_ok=True)
    with sl.ShardWriter(str(directory / "d-%04d.tar"), max_count=per_shard) as writer:
        for i in range(num_samples):
            sample = {"__key__": f"k{i:05d}", "cls": i}
            if make is not None:
                sample.update(make(i))
            writer.write(sample)
    return [info.path for info in writer.shards]


def keys_of(loader):
    return [list(batch["__key__"]) for batch in loader]


def flat(batches):
    return [k for batch in batches for k in batch]


# ---------------------------------------------------------------------------
# torchrun

TORCHRUN_SCRIPT = textwrap.dedent("""
    import json, sys
    import torch
    import torch.distributed as dist
    import shardloader as sl

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    loader = sl.Loader(sys.argv[1:-1], fields={"cls": sl.Int("cls")}, batch_size=7,
                       seed=5)
    assert (loader.rank, loader.world_size) == (rank, world)
    keys, batches = [], 0
    for batch in loader:
        # A collective per step, as training does: uneven batch counts hang here.
        step = torch.tensor([1])
        dist.all_reduce(step)
        assert step.item() == world
        keys.extend(batch["__key__"])
        batches += 1
    everything = [None] * world
    dist.all_gather_object(everything, {"keys": keys, "batches": batches,
                                        "len": len(loader)})
    if rank == 0:
        with open(sys.argv[-1], "w") as f:
            json.dump(everything, f)
    dist.destroy_process_group()
""")


@pytest.mark.parametrize("num_samples,per_shard", [(103, 15), (64, 64)])
def test_torchrun_ranks_get_equal_disjoint_batches_covering_the_epoch(
        tmp_path, num_samples, per_shard):
    """7 shards (or 1, fewer than the ranks) for 2 ranks: equal batch counts,
    no hang, and the ranks' samples are the epoch (103 is padded by one)."""
    pytest.importorskip("torch.distributed")
    shards = write_shards(tmp_path / "data", num_samples, per_shard)
    script = tmp_path / "train.py"
    script.write_text(TORCHRUN_SCRIPT)
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         "--nproc_per_node=2", str(script), *shards, str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = json.loads(out.read_text())
    assert ranks[0]["batches"] == ranks[1]["batches"] == ranks[0]["len"] > 0
    all_keys = ranks[0]["keys"] + ranks[1]["keys"]
    assert set(all_keys) == {f"k{i:05d}" for i in range(num_samples)}
    assert len(all_keys) == num_samples + num_samples % 2  # the padding
    assert len(set(ranks[0]["keys"]) & set(ranks[1]["keys"])) <= num_samples % 2


# ---------------------------------------------------------------------------
# Resume

def test_resume_mid_epoch_yields_exactly_the_remaining_batches(tmp_path):
    shards = write_shards(tmp_path, 300, 40)
    make = lambda: sl.Loader(shards, fields=FIELDS, batch_size=8, seed=2,  # noqa: E731
                             window_shards=3, output="numpy")
    full = keys_of(make())
    for stop_after in (0, 1, 17, len(full) - 1, len(full)):
        loader = make()
        iterator = iter(loader)
        first = [list(next(iterator)["__key__"]) for _ in range(stop_after)]
        saved = json.dumps(loader.state_dict())  # what a checkpoint stores
        assert len(saved) < 300
        resumed = make()
        resumed.load_state_dict(json.loads(saved))
        resumed.set_epoch(0)  # a training loop's usual call keeps the position
        rest = keys_of(resumed)
        assert first + rest == full, stop_after
        # The samples before the position were not read again.
        assert resumed.stats().num_samples_read == max(0, 300 - 8 * stop_after)


def test_resume_from_world_size_one_into_two_ranks_continues_the_order(tmp_path):
    shards = write_shards(tmp_path, 200, 30)
    options = dict(fields=FIELDS, batch_size=8, seed=7, output="numpy")
    single = flat(keys_of(sl.Loader(shards, rank=0, world_size=1, **options)))
    loader = sl.Loader(shards, rank=0, world_size=1, **options)
    iterator = iter(loader)
    for _ in range(5):
        next(iterator)
    state = loader.state_dict()
    assert state["position"] == 40
    ranks = []
    for rank in range(2):
        resumed = sl.Loader(shards, rank=rank, world_size=2, **options)
        resumed.load_state_dict(state)
        ranks.append(keys_of(resumed))
    assert len(ranks[0]) == len(ranks[1]) == 10
    # Global batch g is rank 0's batch g then rank 1's: the same order the
    # single process would have read from position 40 on.
    continued = [k for g in range(10) for r in range(2) for k in ranks[r][g]]
    assert continued == single[40:]


def test_state_from_another_order_is_refused(tmp_path):
    shards = write_shards(tmp_path, 50, 10)
    state = sl.Loader(shards, fields=FIELDS, seed=1).state_dict()
    with pytest.raises(sl.InvalidArgumentError, match="another order"):
        sl.Loader(shards, fields=FIELDS, seed=2).load_state_dict(state)
    with pytest.raises(sl.InvalidArgumentError):
        sl.Loader(shards, fields=FIELDS, seed=1).load_state_dict({"position": 3})


# ---------------------------------------------------------------------------
# Bad samples

def _jpeg(i: int) -> bytes:
    from PIL import Image as PILImage
    pixels = np.full((16, 16, 3), i % 256, dtype=np.uint8)
    out = io.BytesIO()
    PILImage.fromarray(pixels).save(out, format="JPEG")
    return out.getvalue()


def _npy(i: int) -> bytes:
    out = io.BytesIO()
    np.save(out, np.full((2,), i, dtype=np.float32))
    return out.getvalue()


@pytest.fixture()
def corrupt_shards(tmp_path):
    """120 samples (jpg, npy, cls) in 6 shards with a truncated JPEG, a bad
    .npy and a member whose tar header was damaged after packing."""
    def make(i):
        jpeg, npy = _jpeg(i), _npy(i)
        if i == 13:
            jpeg = jpeg[: len(jpeg) // 3]
        if i == 57:
            npy = b"\x93NUMPY garbage"
        return {"jpg": jpeg, "npy": npy}
    shards = write_shards(tmp_path, 120, 20, make)
    # Damage sample k00090's .cls header (shard 4, sample 10) in place: its
    # index file still points at it.
    import tarfile
    with tarfile.open(shards[4]) as tar:
        member = tar.getmember("k00090.cls")
    data = bytearray(open(shards[4], "rb").read())
    data[member.offset + 148] ^= 0x1  # the header checksum no longer matches
    open(shards[4], "wb").write(bytes(data))
    return shards


CORRUPT_FIELDS = {"image": sl.Image("jpg", size=8), "vec": sl.Npy("npy", shape=(2,),
                                                                  dtype="float32"),
                  "cls": sl.Int("cls")}


def test_raise_names_the_first_bad_sample(corrupt_shards):
    with pytest.raises(sl.DataLossError) as info:
        for _ in sl.Loader(corrupt_shards, fields=CORRUPT_FIELDS, batch_size=10,
                           shuffle=False):
            pass
    assert info.value.key == "k00013" and info.value.uri.endswith("d-0000.tar")
    assert info.value.offset is not None


def test_skip_keeps_ranks_equal_and_reruns_and_resumes_identical(corrupt_shards, caplog):
    def run(rank, **extra):
        return sl.Loader(corrupt_shards, fields=CORRUPT_FIELDS, batch_size=10, seed=3,
                         rank=rank, world_size=2, on_error="skip", max_errors=0.1,
                         output="numpy", **extra)

    with caplog.at_level("WARNING", logger="shardloader"):
        per_rank = [keys_of(run(rank)) for rank in range(2)]
    assert len(per_rank[0]) == len(per_rank[1]) == 6
    seen = flat(per_rank[0]) + flat(per_rank[1])
    assert len(seen) == 120
    assert not {"k00013", "k00057", "k00090"} & set(seen)
    skipped = {r.getMessage().split("'")[1] for r in caplog.records
               if "skipped sample" in r.getMessage()}
    assert skipped == {"k00013", "k00057", "k00090"}
    # Identical on rerun, and on resume from the middle.
    assert [keys_of(run(rank)) for rank in range(2)] == per_rank
    loader = run(1)
    iterator = iter(loader)
    first = [list(next(iterator)["__key__"]) for _ in range(3)]
    resumed = run(1)
    resumed.load_state_dict(loader.state_dict())
    assert first + keys_of(resumed) == per_rank[1]
    stats = loader.stats()
    assert stats.num_skipped >= 1 and stats.skipped[0].key in {"k00013", "k00057", "k00090"}


def test_skip_budget_is_enforced(corrupt_shards):
    with pytest.raises(sl.DataLossError, match="max_errors"):
        for _ in sl.Loader(corrupt_shards, fields=CORRUPT_FIELDS, batch_size=10,
                           on_error="skip", max_errors=2):
            pass


# ---------------------------------------------------------------------------
# Sample indexes

def test_index_command_writes_the_index_pack_would_write(tmp_path):
    """Shards written by another tool get the same .idx as ShardWriter's; the
    loader then counts from it without reading the shard's headers."""
    from conftest import shardloader_command
    shards = write_shards(tmp_path, 30, 10, lambda i: {"txt": "x" * i})
    written = {s: open(s[:-4] + ".idx").read() for s in shards}
    for s in shards:
        (tmp_path / (s[:-4] + ".idx")).unlink()
    proc = subprocess.run([*shardloader_command(), "index", str(tmp_path / "d-{0000..0002}.tar")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "indexed 3 of 3 shards" in proc.stdout
    for s in shards:
        assert open(s[:-4] + ".idx").read() == written[s]
    assert written[shards[0]].startswith("v1.2 10\n")


def test_dali_index_files_are_used(tmp_path):
    """A DALI v1.1 index (no member names) is read too: keys then come from
    the sample's number in the shard."""
    shards = write_shards(tmp_path, 12, 12)
    idx = tmp_path / "d-0000.idx"
    lines = idx.read_text().splitlines()
    v11 = ["v1.1 12"] + [" ".join(line.split()[:3]) for line in lines[1:]]
    idx.write_text("\n".join(v11) + "\n")
    batch = next(iter(sl.Loader(shards, fields=FIELDS, batch_size=12, shuffle=False,
                                output="numpy")))
    assert batch["cls"].tolist() == list(range(12))
    assert batch["__key__"] == [str(i) for i in range(12)]


def test_a_stale_index_is_an_error_not_a_wrong_sample(tmp_path):
    shards = write_shards(tmp_path, 10, 10, lambda i: {"txt": "a" * 600})
    idx = (tmp_path / "d-0000.idx").read_text()
    write_shards(tmp_path, 10, 10, lambda i: {"txt": "a" * 5})  # rewritten shard
    (tmp_path / "d-0000.idx").write_text(idx)                    # old index back
    # The index now reaches past the (smaller) shard: rejected when loaded.
    with pytest.raises(sl.DataLossError,
                       match="no matching tar header|does not fit in the shard") as info:
        for _ in sl.Loader(shards, fields={"t": sl.Text("txt")}, batch_size=5,
                           shuffle=False):
            pass
    assert info.value.uri == shards[0] and info.value.key
