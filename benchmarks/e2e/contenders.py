"""Runs ONE contender of ONE scenario in this (fresh) process.

``python3 contenders.py SPEC.json`` -- run.py writes the spec and starts one
process per contender, so that no contender's threads, worker processes or
allocator state disturb another's. The process pins itself (and so every
thread and worker process it starts) to ``spec["cores"]`` before importing
anything heavy, runs the warm-up epoch(s) and the timed epochs, and prints
one line ``RESULT {json}`` on stdout. It measures; it never asserts: a
contender that cannot be imported reports ``"not available: <reason>"``, one
that raises reports ``"failed: <error>"``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

_CLK_TCK = os.sysconf("SC_CLK_TCK")


class NotAvailable(Exception):
    """The contender cannot run here (not installed, feature missing)."""


# ------------------------------------------------------------- measuring --

def _proc_cpu_seconds(pid: int, with_reaped: bool) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After ")": state is fields[0]; utime, stime, cutime, cstime are
    # stat fields 14..17, i.e. fields[11..14] here.
    ticks = int(fields[11]) + int(fields[12])
    if with_reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / _CLK_TCK


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, its live descendants
    (e.g. DataLoader workers) and the children they have reaped."""
    total = _proc_cpu_seconds(os.getpid(), True)
    for pid in _descendants(os.getpid()):
        try:
            total += _proc_cpu_seconds(pid, True)
        except OSError:
            pass
    return total


def cores_busy_seconds(cores) -> float:
    """CPU seconds that ANY process (also ones in other containers, invisible
    to ps) spent on ``cores``, from /proc/stat (user, nice, system, irq,
    softirq, steal)."""
    wanted = {f"cpu{c}" for c in cores}
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] in wanted:
                user, nice, system, idle, iowait, irq, softirq, steal = map(int, parts[1:9])
                total += user + nice + system + irq + softirq + steal
    return total / _CLK_TCK


class CpuMeter:
    """Our process tree's CPU use and everyone else's on our cores."""

    def __init__(self, cores):
        self.cores = list(cores)
        self.wall = time.perf_counter()
        self.ours = tree_cpu_seconds()
        self.all = cores_busy_seconds(self.cores)

    def read(self) -> dict:
        wall = time.perf_counter() - self.wall
        ours = tree_cpu_seconds() - self.ours
        everyone = cores_busy_seconds(self.cores) - self.all
        capacity = wall * len(self.cores)
        return {"cpu_seconds": ours,
                "cpu_utilization": ours / capacity if capacity else None,
                "other_load": max(0.0, everyone - ours) / capacity if capacity else None}


def run_epochs(spec, make_iter, count, on_warm=None):
    """Iterates epochs: ``warmup_epochs`` untimed (reported as "cold"), then
    timed ones until at least ``epochs`` of them and ``min_seconds`` of
    timed wall time (at most ``max_epochs``, and no more once
    ``max_seconds`` of timed epochs have run). ``count(batch)`` gives
    (samples, payload bytes)."""
    warmup = spec["warmup_epochs"]
    epochs = []
    first_shape = None
    meter = wall0 = None
    epoch = 0
    while True:
        if epoch == warmup:
            if on_warm:
                on_warm()
            meter, wall0 = CpuMeter(spec["cores"]), time.perf_counter()
        start = time.perf_counter()
        first = None
        samples = nbytes = 0
        for batch in make_iter(epoch):
            if first is None:
                first = time.perf_counter() - start
                first_shape = first_shape or describe_batch(batch)
            n, b = count(batch)
            samples += n
            nbytes += b
        seconds = time.perf_counter() - start
        epochs.append({"epoch": epoch, "timed": epoch >= warmup, "seconds": seconds,
                       "samples": samples, "bytes": nbytes, "first_batch_s": first})
        epoch += 1
        timed = [e for e in epochs if e["timed"]]
        if len(timed) >= spec["max_epochs"]:
            break
        # A time cap keeps slow contenders from running for minutes: at
        # least one timed epoch, then stop once max_seconds have passed.
        if timed and sum(e["seconds"] for e in timed) >= spec.get("max_seconds", float("inf")):
            break
        if len(timed) >= spec["epochs"] and sum(e["seconds"] for e in timed) >= spec["min_seconds"]:
            break
    return summarize(epochs, meter.read(), first_shape)


def summarize(epochs, cpu, first_shape):
    timed = [e for e in epochs if e["timed"]]
    cold = [e for e in epochs if not e["timed"]]
    def rate(es, key):
        seconds = sum(e["seconds"] for e in es)
        return sum(e[key] for e in es) / seconds if es and seconds > 0 else None
    per_epoch = [e["samples"] / e["seconds"] for e in timed if e["seconds"] > 0]
    return {
        "status": "ok",
        "samples_per_s": rate(timed, "samples"),
        "bytes_per_s": rate(timed, "bytes"),
        "cold_samples_per_s": rate(cold, "samples"),
        "samples_per_s_epochs": per_epoch,
        "samples_per_epoch": timed[0]["samples"] if timed else None,
        "timed_epochs": len(timed),
        "timed_seconds": sum(e["seconds"] for e in timed),
        **cpu,
        "first_batch": first_shape,
        "epochs": epochs,
    }


def describe_batch(batch):
    """Shapes and dtypes of a batch, to check that everyone produced the same."""
    def one(value):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return f"{str(value.dtype).replace('torch.', '')}{list(value.shape)}"
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], (bytes, str)):
            return f"list[{type(value[0]).__name__}]x{len(value)}"
        if isinstance(value, (list, tuple)):
            return [one(v) for v in value]
        return type(value).__name__
    if isinstance(batch, dict):
        return {k: one(v) for k, v in batch.items() if not k.startswith("__")}
    return one(batch)


def count_pair(batch):
    """(samples, payload bytes) of an (images, labels) batch, or of a
    ((values, offsets), labels) raw-bytes batch."""
    data, labels = batch[0], batch[1]
    if isinstance(data, (list, tuple)):  # (values, offsets)
        return len(labels), int(data[0].numel())
    return len(labels), int(data.numel())


def count_dict(batch):
    labels = batch["label"]
    data = batch["data"]
    if isinstance(data, tuple):  # sl.Ragged(values, offsets)
        return len(labels), int(data[0].numel())
    return len(labels), int(data.numel())


# --------------------------------------------------------- torch helpers --

def collate_images(samples):
    """[(uint8 (H, W, 3) ndarray, int)] -> (uint8 (B, H, W, 3), int64 (B,)),
    what torch's default_collate gives, without its per-type dispatch."""
    import numpy as np
    import torch
    images = torch.from_numpy(np.stack([s[0] for s in samples]))
    labels = torch.tensor([s[1] for s in samples], dtype=torch.int64)
    return images, labels


def collate_bytes(samples):
    """[(bytes, int)] -> ((uint8 values (N,), int64 offsets (B+1,)), int64 (B,)):
    the layout of shardloader's sl.Bytes (Ragged)."""
    import numpy as np
    import torch
    lengths = [len(s[0]) for s in samples]
    offsets = np.zeros(len(samples) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = torch.from_numpy(np.frombuffer(b"".join(s[0] for s in samples), dtype=np.uint8).copy())
    labels = torch.tensor([s[1] for s in samples], dtype=torch.int64)
    return (values, torch.from_numpy(offsets)), labels


def collate_for(transform):
    return collate_bytes if transform["kind"] == "bytes" else collate_images


def dataloader_kwargs(spec, collate):
    workers = spec["workers"]
    kwargs = {"batch_size": spec["batch_size"], "num_workers": workers,
              "collate_fn": collate, "drop_last": False, "pin_memory": False}
    if workers > 0:
        kwargs["persistent_workers"] = True
        kwargs["prefetch_factor"] = 2
    return kwargs


def require(module: str):
    import importlib
    try:
        return importlib.import_module(module)
    except Exception as error:  # ImportError, or a broken install
        raise NotAvailable(f"`import {module}` failed: {type(error).__name__}: {error}") from error


# ------------------------------------------------------------ contenders --

def run_shardloader(spec):
    sl = require("shardloader")
    from transforms import shardloader_image_field
    try:
        field = shardloader_image_field(spec["transform"], spec["data"]["ext"])
    except NotImplementedError as error:
        raise NotAvailable(str(error)) from error
    loader = sl.Loader(spec["data"]["shards"] * spec.get("data_repeat", 1),
                       fields={"data": field, "label": sl.Int("cls")},
                       batch_size=spec["batch_size"], shuffle=True, seed=spec["seed"],
                       num_threads=spec["threads"])
    stats = {}

    def snapshot():
        try:
            s = loader._core.stats()
        except Exception:  # stats() is recent; older builds lack it
            return None
        return {k: getattr(s, k) for k in dir(s)
                if not k.startswith("_") and isinstance(getattr(s, k), (int, float))}

    def on_warm():
        stats["at_warm"] = snapshot()

    def make_iter(epoch):
        loader.set_epoch(epoch)
        return iter(loader)

    result = run_epochs(spec, make_iter, count_dict, on_warm)
    end = snapshot()
    if end and stats.get("at_warm"):
        result["loader_stats_timed"] = {k: end[k] - stats["at_warm"].get(k, 0) for k in end
                                        if k.endswith("_s") or k.startswith("num_")}
    result["options"] = {"num_threads": spec["threads"], "batch_size": spec["batch_size"],
                         "shuffle": True, "field": repr(field)}
    loader.close()
    return result


class _FileDataset:
    """Map-style dataset over individual files (torchvision ImageFolder-like)."""

    def __init__(self, files, transform, seed):
        from transforms import pil_transform
        self.files = files
        self.transform_spec = transform
        self.seed = seed
        self.apply = pil_transform(transform, seed)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        path, label = self.files[index]
        with open(path, "rb") as f:
            data = f.read()
        return self.apply(data), label


def _worker_init(worker_id):
    # A different augmentation stream per worker (random_resized only).
    import torch
    info = torch.utils.data.get_worker_info()
    dataset = info.dataset
    if hasattr(dataset, "transform_spec"):
        from transforms import pil_transform
        dataset.apply = pil_transform(dataset.transform_spec, dataset.seed * 1000 + worker_id)


def run_torch_files(spec):
    torch = require("torch")
    with open(spec["data"]["files"]) as f:
        files = json.load(f) * spec.get("data_repeat", 1)
    dataset = _FileDataset(files, spec["transform"], spec["seed"])
    generator = torch.Generator()
    generator.manual_seed(spec["seed"])
    loader = torch.utils.data.DataLoader(
        dataset, shuffle=True, generator=generator, worker_init_fn=_worker_init,
        **dataloader_kwargs(spec, collate_for(spec["transform"])))
    result = run_epochs(spec, lambda epoch: iter(loader), count_pair)
    result["options"] = {"num_workers": spec["workers"], "batch_size": spec["batch_size"],
                         "persistent_workers": spec["workers"] > 0, "shuffle": True}
    return result


def run_webdataset(spec):
    wds = require("webdataset")
    torch = require("torch")
    from transforms import pil_transform
    transform, ext = spec["transform"], spec["data"]["ext"]
    apply = pil_transform(transform, spec["seed"])
    collate = collate_for(transform)

    def to_pair(sample):
        return apply(sample[ext]), int(sample["cls"])

    shards = spec["data"]["shards"] * spec.get("data_repeat", 1)
    dataset = (wds.WebDataset(shards, shardshuffle=len(shards), seed=spec["seed"],
                              empty_check=False)
               .shuffle(1000)  # a sample shuffle buffer of 1000, webdataset's usual setting
               .map(to_pair)
               .batched(spec["batch_size"], collation_fn=collate, partial=True))
    kwargs = dataloader_kwargs(spec, None)
    kwargs.update(batch_size=None, collate_fn=None)
    loader = wds.WebLoader(dataset, **kwargs)
    result = run_epochs(spec, lambda epoch: iter(loader), count_pair)
    result["options"] = {"num_workers": spec["workers"], "batch_size": spec["batch_size"],
                         "batched_in": "workers (.batched)", "shardshuffle": len(shards),
                         "shuffle_buffer": 1000, "persistent_workers": spec["workers"] > 0}
    return result


def _stub_streaming_vision():
    """``import streaming`` imports ``streaming.vision`` (StreamingCIFAR10 and
    friends), which needs torchvision; no torchvision build matches this torch
    offline. The benchmark uses only StreamingDataset and MDSWriter, so an
    empty ``streaming.vision`` is put in its place, in this process only."""
    import types
    try:
        import torchvision  # noqa: F401
        return False
    except Exception:
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
    sys.modules["streaming.vision"] = types.ModuleType("streaming.vision")
    return True


def run_streaming(spec):
    stubbed = _stub_streaming_vision()
    streaming = require("streaming")
    torch = require("torch")
    from transforms import pil_transform
    try:
        from streaming.base.util import clean_stale_shared_memory
        clean_stale_shared_memory()
    except Exception:
        pass
    apply = pil_transform(spec["transform"], spec["seed"])
    ext = spec["data"]["ext"]

    class Dataset(streaming.StreamingDataset):
        def __getitem__(self, index):
            sample = super().__getitem__(index)
            return apply(sample[ext]), int(sample["cls"])

    repeat = spec.get("data_repeat", 1)
    dataset = Dataset(local=spec["data"]["mds"], remote=None, shuffle=True,
                      shuffle_seed=spec["seed"], batch_size=spec["batch_size"],
                      epoch_size=spec["data"]["num_samples"] * repeat if repeat > 1 else None)
    loader = torch.utils.data.DataLoader(
        dataset, **dataloader_kwargs(spec, collate_for(spec["transform"])))
    result = run_epochs(spec, lambda epoch: iter(loader), count_pair)
    result["options"] = {"num_workers": spec["workers"], "batch_size": spec["batch_size"],
                         "shuffle": True, "persistent_workers": spec["workers"] > 0,
                         "streaming.vision stubbed (no torchvision)": stubbed}
    return result


def run_litdata(spec):
    litdata = require("litdata")
    require("torch")
    from transforms import pil_transform
    apply = pil_transform(spec["transform"], spec["seed"])
    ext = spec["data"]["ext"]

    class Dataset(litdata.StreamingDataset):
        def __getitem__(self, index):
            sample = super().__getitem__(index)
            return apply(sample[ext]), int(sample["cls"])

    dataset = Dataset(spec["data"]["litdata"], shuffle=True, seed=spec["seed"],
                      subsample=float(spec.get("data_repeat", 1)))
    kwargs = dataloader_kwargs(spec, collate_for(spec["transform"]))
    loader = litdata.StreamingDataLoader(dataset, **kwargs)
    result = run_epochs(spec, lambda epoch: iter(loader), count_pair)
    result["options"] = {"num_workers": spec["workers"], "batch_size": spec["batch_size"],
                         "shuffle": True, "persistent_workers": spec["workers"] > 0}
    return result


# --------------------------------------------------------- single-core refs --

def _timed_passes(spec, items, fn):
    """Untimed warm-up pass, then passes until min_seconds; per-item rate."""
    for item in items:
        fn(item)
    passes, start = 0, time.perf_counter()
    meter = CpuMeter(spec["cores"])
    rates = []
    while True:
        t = time.perf_counter()
        for item in items:
            fn(item)
        rates.append(len(items) / (time.perf_counter() - t))
        passes += 1
        elapsed = time.perf_counter() - start
        if passes >= spec["epochs"] and elapsed >= spec["min_seconds"]:
            break
    return {"items_per_s": passes * len(items) / elapsed, "passes": passes,
            "seconds": elapsed, "per_pass": rates, **meter.read()}


def run_jpeg_decode(spec):
    """Scenario 4: one core, in-memory JPEG bytes, several decoders."""
    import numpy as np
    from PIL import Image, features
    import io
    with open(spec["data"]["files"]) as f:
        files = [p for p, _ in json.load(f)]
    blobs = [open(p, "rb").read() for p in files]
    total_bytes = sum(map(len, blobs))
    sizes = [Image.open(io.BytesIO(b)).size for b in blobs]
    megapixels = sum(w * h for w, h in sizes) / 1e6
    out_size = spec["transform"].get("size", 224)
    decoders = {}

    def add(name, library, fn):
        try:
            fn(blobs[0])
        except Exception as error:
            decoders[name] = {"status": f"not available: {type(error).__name__}: {error}",
                              "library": library}
            return
        measured = _timed_passes(spec, blobs, fn)
        measured.update(status="ok", library=library,
                        bytes_per_s=measured["items_per_s"] * total_bytes / len(blobs),
                        megapixels_per_s=measured["items_per_s"] * megapixels / len(blobs))
        decoders[name] = measured

    try:
        from turbojpeg import TurboJPEG, TJPF_RGB
        tj = TurboJPEG()
        add("turbojpeg_full", "PyTurboJPEG -> system libturbojpeg (the library shardloader links)",
            lambda b: tj.decode(b, pixel_format=TJPF_RGB))
        factors = set(tuple(f) for f in tj.scaling_factors)

        def smallest_scale(w, h, numerators):
            # The smallest scale k/8 (k in numerators) at which the centre
            # crop still covers the output: shardloader's rule
            # (cpp/shardloader/decode/image.cc), with k = 1, 2, 4, 8 since
            # the build of 2026-11-21 19:04 and k = 1..8 before.
            import math
            for k in numerators:
                sw, sh = -(-w * k // 8), -(-h * k // 8)
                if min(sw, sh) >= out_size:
                    g = math.gcd(k, 8)
                    return (k // g, 8 // g)
            return (1, 1)
        for name, numerators, library in () if spec["transform"]["kind"] != "center_crop" else (
                ("turbojpeg_dct_pow2", (1, 2, 4, 8),
                 "libturbojpeg at the 1/2^n DCT scale that still covers a 224 center crop "
                 "(shardloader's rule now, and PIL's draft; whole image, no ROI)"),
                ("turbojpeg_dct_k8", range(1, 9),
                 "libturbojpeg at the k/8 DCT scale that still covers it (shardloader's "
                 "first rule; k = 3, 5, 6, 7 have no SIMD IDCT in libjpeg-turbo 2.1)")):
            scales = [smallest_scale(w, h, numerators) for w, h in sizes]
            if not all(s in factors for s in scales):
                continue
            by_blob = dict(zip(map(id, blobs), scales))
            add(name, library, lambda b, by_blob=by_blob: tj.decode(
                b, pixel_format=TJPF_RGB, scaling_factor=by_blob[id(b)]))
            if decoders.get(name, {}).get("status") == "ok":
                decoders[name]["mean_pixel_fraction"] = float(
                    np.mean([(a / b) ** 2 for a, b in scales]))
    except Exception as error:
        decoders["turbojpeg_full"] = {"status": f"not available: {type(error).__name__}: {error}"}
    try:
        import simplejpeg
        add("simplejpeg_full", f"simplejpeg {simplejpeg.__version__} (bundled libjpeg-turbo)",
            lambda b: simplejpeg.decode_jpeg(b, colorspace="RGB"))
    except Exception as error:
        decoders["simplejpeg_full"] = {"status": f"not available: {type(error).__name__}: {error}"}
    add("pil_full", f"Pillow {Image.__version__} (libjpeg-turbo "
        f"{features.version('libjpeg_turbo')}): Image.open().convert('RGB')",
        lambda b: Image.open(io.BytesIO(b)).convert("RGB").load())
    if spec["transform"]["kind"] != "bytes":
        from transforms import pil_transform
        add("pil_pipeline", "the PIL peers' per-sample work: draft + decode + resize/crop "
            "(transforms.py)", pil_transform(spec["transform"], spec["seed"]))
    return {"status": "ok", "decoders": decoders, "images": len(blobs),
            "encoded_bytes": total_bytes, "megapixels": megapixels}


def run_memcpy(spec):
    """Scenario 3's reference: single-core copy bandwidth of a large buffer."""
    import ctypes
    import numpy as np
    size = spec.get("buffer_bytes", 256 << 20)
    src = np.ones(size, dtype=np.uint8)
    dst = np.empty_like(src)
    out = {}
    meter = CpuMeter(spec["cores"])
    for name, fn in [("numpy_copyto", lambda: np.copyto(dst, src)),
                     ("ctypes_memmove", lambda: ctypes.memmove(dst.ctypes.data, src.ctypes.data, size))]:
        fn()
        reps, start = 0, time.perf_counter()
        while True:
            fn()
            reps += 1
            elapsed = time.perf_counter() - start
            if reps >= 3 and elapsed >= spec["min_seconds"] / 2:
                break
        out[name] = {"bytes_per_s": reps * size / elapsed, "copies": reps}
    return {"status": "ok", "buffer_bytes": size, "copies": out, **meter.read(),
            "bytes_per_s": out["numpy_copyto"]["bytes_per_s"]}


RUNNERS = {
    "shardloader": run_shardloader,
    "torch_files": run_torch_files,
    "webdataset": run_webdataset,
    "streaming": run_streaming,
    "litdata": run_litdata,
    "jpeg_decode": run_jpeg_decode,
    "memcpy": run_memcpy,
}


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    os.sched_setaffinity(0, spec["cores"])
    started = time.perf_counter()
    try:
        result = RUNNERS[spec["runner"]](spec)
    except NotAvailable as error:
        result = {"status": f"not available: {error}"}
    except Exception as error:  # a benchmark reports, it does not crash
        traceback.print_exc()
        result = {"status": f"failed: {type(error).__name__}: {error}"}
    result["affinity"] = sorted(os.sched_getaffinity(0))
    result["process_seconds"] = time.perf_counter() - started
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
