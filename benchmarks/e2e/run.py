#!/usr/bin/env python3
"""shardloader's end-to-end benchmark: shardloader and its peers, same data, same cores, one run.

    python3 benchmarks/e2e/run.py            # full run (~6-8 min on 2 idle cores)
    python3 benchmarks/e2e/run.py --quick    # one timed epoch each (~3 min)

Packs the real data in ../shared/data into a temporary work directory (never
into the repository), converts the same images to each peer's own format
outside the timed region, reads everything once so that every contender finds
the same files in the page cache, then runs each contender in a fresh
process pinned to the same cores. Writes ``e2e.json`` (or ``e2e-quick.json``)
and a plot ``e2e.png`` to ``--out`` (benchmarks/e2e/results) and prints a
table with ratios to shardloader. See README.md beside this file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import transforms  # noqa: E402

LABELS = {
    "shardloader": "shardloader ({threads} thread{ts})",
    "shardloader_1core": "shardloader (1 thread, 1 core)",
    "torch_files": "torch DataLoader{pil}, files ({workers} worker{ws})",
    "webdataset": "webdataset{pil} ({workers} worker{ws})",
    "streaming": "MosaicML streaming{pil} ({workers} worker{ws})",
    "litdata": "LitData{pil} ({workers} worker{ws})",
}
RUNNER = {"shardloader_1core": "shardloader"}
PANELS = ("imagenet_decode", "imagenet_decode_steady", "cifar_decode", "cifar_bytes",
          "imagenet_bytes")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------ machine info --

def _version(module: str) -> str | None:
    import importlib
    import importlib.metadata
    for name in (module,):
        try:
            return importlib.metadata.version(name)
        except Exception:
            pass
    try:
        return getattr(importlib.import_module(module), "__version__", "?")
    except Exception as error:
        return f"not available: {type(error).__name__}: {error}"


def machine_info(cores: list[int]) -> dict:
    cpu_model = None
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and cpu_model is None:
                cpu_model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line
    mem_total = None
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem_total = int(line.split()[1]) * 1024
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                                  timeout=20).stdout.strip()
        except Exception:
            return None
    from PIL import Image, features
    import numpy
    info = {
        "cpu_model": cpu_model,
        "cpu_flags_avx2": " avx2 " in flags, "cpu_flags_avx512f": " avx512f " in flags,
        "cores_online": os.cpu_count(),
        "cores_used": cores,
        "memory_bytes": mem_total,
        "kernel": platform.release(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            "shardloader": _version("shardloader"),
            "torch": _version("torch"),
            "numpy": numpy.__version__,
            "pillow": Image.__version__,
            "pillow_libjpeg_turbo": features.version("libjpeg_turbo"),
            "webdataset": _version("webdataset"),
            "mosaicml-streaming": _version("mosaicml-streaming"),
            "litdata": _version("litdata"),
            "simplejpeg": _version("simplejpeg"),
            "PyTurboJPEG": _version("PyTurboJPEG"),
            "matplotlib": _version("matplotlib"),
            "system_libturbojpeg": run(["dpkg-query", "-W", "-f", "${Version}", "libturbojpeg0"]),
        },
        "repo_commit": run(["git", "rev-parse", "HEAD"]),
        "repo_dirty": bool(run(["git", "status", "--porcelain", "--untracked-files=no"])),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    try:  # the build that ran: the installed package may be rebuilt at any time
        import glob
        import hashlib
        import shardloader
        info["shardloader_module"] = shardloader.__file__
        for so in glob.glob(os.path.join(os.path.dirname(shardloader.__file__), "_core*.so")):
            with open(so, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()[:16]
            info["shardloader_core_so"] = {
                "sha256_16": digest,
                "mtime_utc": datetime.datetime.fromtimestamp(
                    os.path.getmtime(so), datetime.timezone.utc).isoformat(timespec="seconds")}
    except Exception:
        pass
    return info


# -------------------------------------------------------------- data prep --

def image_folder(root: str, exts: tuple[str, ...]) -> list[list]:
    """[[path, label]] in sorted order; label = index of the sorted class folder."""
    classes = sorted(d for d in os.listdir(root)
                     if os.path.isdir(os.path.join(root, d)) and not d.startswith("."))
    files = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for entry in sorted(os.listdir(folder)):
            if entry.lower().endswith(exts) and not entry.startswith("."):
                files.append([os.path.join(folder, entry), label])
    return files


def pack_shards(src: str, out_dir: str, max_count: int) -> list[str]:
    from shardloader.cli.pack import pack
    os.makedirs(out_dir, exist_ok=True)
    writer = pack(src, os.path.join(out_dir, "shard-%06d.tar"), max_count=max_count,
                  progress=False)
    return [os.fspath(s.path) for s in writer.shards]


MDS_WRITER = (  # MosaicML Streaming's MDS format: raw bytes + label
    "import sys, json, types\n"
    "sys.modules['streaming.vision'] = types.ModuleType('streaming.vision')\n"
    "from streaming import MDSWriter\n"
    "for files, ext, out, limit in json.load(open(sys.argv[1])):\n"
    "    with MDSWriter(out=out, columns={ext: 'bytes', 'cls': 'int'}, size_limit=limit) as w:\n"
    "        for path, label in files:\n"
    "            w.write({ext: open(path, 'rb').read(), 'cls': label})\n")

LITDATA_WRITER = (  # LitData's chunk format: raw bytes + label
    "import sys, json\n"
    "from litdata.streaming.writer import BinaryWriter\n"
    "for files, ext, out, limit in json.load(open(sys.argv[1])):\n"
    "    w = BinaryWriter(out, chunk_bytes=limit)\n"
    "    for i, (path, label) in enumerate(files):\n"
    "        w.add_item(i, {ext: open(path, 'rb').read(), 'cls': label})\n"
    "    w.done(); w.merge()\n")


def convert_all(work: str, converters: dict[str, tuple[str, list]]) -> dict[str, str]:
    """Runs each peer's writer ({name: (code, [(files, ext, out_dir, limit)])})
    in its own process, all at once; returns {name: "" or "not available: ..."}."""
    procs = {}
    for name, (code, jobs) in converters.items():
        for _, _, out_dir, _ in jobs:
            shutil.rmtree(out_dir, ignore_errors=True)
            os.makedirs(out_dir)
        args_path = os.path.join(work, f"convert-{name}.json")
        with open(args_path, "w") as f:
            json.dump(jobs, f)
        procs[name] = subprocess.Popen([sys.executable, "-c", code, args_path],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
    status = {}
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=600)
        last = (err.strip().splitlines() or ["?"])[-1]
        status[name] = "" if proc.returncode == 0 else f"not available: conversion failed: {last}"
    return status


def read_everything(paths: list[str]) -> int:
    """One untimed read of every file, so all contenders find them cached."""
    total = 0
    for root in paths:
        walk = [(os.path.dirname(root), [], [os.path.basename(root)])] if os.path.isfile(root) \
            else os.walk(root)
        for folder, _, names in walk:
            for name in names:
                with open(os.path.join(folder, name), "rb") as f:
                    while chunk := f.read(1 << 22):
                        total += len(chunk)
    return total


def prepare(args, work: str) -> dict:
    data = {}
    imagenet_src = os.path.join(args.data, "imagenet-sample")
    cifar_src = os.path.join(args.data, "cifar10-test")
    t0 = time.perf_counter()
    # ImageNet-like: 1000 JPEGs, packed by shardloader's pack (8 shards of 125).
    files = image_folder(imagenet_src, (".jpeg", ".jpg"))
    files_json = os.path.join(work, "imagenet-files.json")
    with open(files_json, "w") as f:
        json.dump(files, f)
    shards = pack_shards(imagenet_src, os.path.join(work, "imagenet-shards"), max_count=125)
    encoded = sum(os.path.getsize(p) for p, _ in files)
    data["imagenet"] = {
        "source": imagenet_src, "files": files_json, "shards": shards,
        "ext": "jpeg",  # pack keeps the files' extension (.JPEG, lower-cased)
        "num_samples": len(files), "encoded_bytes": encoded,
        "shard_bytes": sum(os.path.getsize(s) for s in shards),
        "mds": os.path.join(work, "imagenet-mds"), "litdata": os.path.join(work, "imagenet-litdata"),
    }
    imagenet_files = files
    # Many tiny files: CIFAR-10 test, 10,000 JPEGs of 32x32; the shards
    # WebDataset's own writer made (read-only, in the shared data folder).
    files = image_folder(os.path.join(cifar_src, "images"), (".jpg",))
    files_json = os.path.join(work, "cifar-files.json")
    with open(files_json, "w") as f:
        json.dump(files, f)
    shard_dir = os.path.join(cifar_src, "shards")
    shards = sorted(os.path.join(shard_dir, s) for s in os.listdir(shard_dir) if s.endswith(".tar"))
    data["cifar"] = {
        "source": os.path.join(cifar_src, "images"), "files": files_json, "shards": shards,
        "ext": "jpg", "num_samples": len(files),
        "encoded_bytes": sum(os.path.getsize(p) for p, _ in files),
        "shard_bytes": sum(os.path.getsize(s) for s in shards),
        "mds": os.path.join(work, "cifar-mds"), "litdata": os.path.join(work, "cifar-litdata"),
    }
    # The peers' own formats, from the same files (both writers at once).
    status = convert_all(work, {
        "mds": (MDS_WRITER, [(imagenet_files, "jpeg", data["imagenet"]["mds"], 1 << 24),
                             (files, "jpg", data["cifar"]["mds"], 1 << 22)]),
        "litdata": (LITDATA_WRITER, [(imagenet_files, "jpeg", data["imagenet"]["litdata"], 1 << 24),
                                     (files, "jpg", data["cifar"]["litdata"], 1 << 22)])})
    for d in (data["imagenet"], data["cifar"]):
        d["mds_status"], d["litdata_status"] = status["mds"], status["litdata"]
    prep_s = time.perf_counter() - t0
    cached = read_everything([imagenet_src, os.path.join(cifar_src, "images"), shard_dir, work])
    for d in data.values():
        d["files_count_note"] = "labels = index of the sorted class folder"
    log(f"prepared data in {prep_s:.1f}s; read {cached / 1e6:.0f} MB once to warm the page cache")
    return data


# ------------------------------------------------------------- scenarios --

def scenarios(args, data, cores):
    n = len(cores)
    epochs = 1 if args.quick else args.epochs
    common = {"warmup_epochs": 1, "epochs": epochs, "max_epochs": 200, "seed": 0,
              "batch_size": args.batch_size,
              "max_seconds": 3.0 if args.quick else args.max_seconds}
    peers = ["shardloader", "torch_files", "webdataset", "streaming", "litdata"]
    transform = transforms.CENTER_CROP if args.transform == "center_crop" else transforms.RANDOM_RESIZED
    transform = dict(transform, size=args.size)
    # Epochs of the fast scenarios are made longer (the shard/file list
    # repeated) so that the per-epoch start and drain do not dominate:
    cifar_repeat = 1 if args.quick else 2
    bytes_repeat = 4 if args.quick else 10
    out = [
        {"name": "jpeg_single_core", "title": "4. The physical limit: libjpeg-turbo, one core, "
         "full-size decode of the imagenet-sample JPEGs (in memory)",
         "kind": "reference", "dataset": "imagenet", "runner": "jpeg_decode",
         "transform": transform, "cores": cores[:1],
         "min_seconds": 1.0 if args.quick else 2.0, "epochs": 1 if args.quick else 2},
        {"name": "memcpy", "title": "3'. memcpy bandwidth, one core (reference for scenario 3)",
         "kind": "reference", "runner": "memcpy", "cores": cores[:1],
         "min_seconds": 1.0 if args.quick else 2.0, "epochs": 1},
        {"name": "imagenet_decode", "title": f"1. ImageNet-like training input: "
         f"{transforms.describe(transform)}, batch {args.batch_size}",
         "dataset": "imagenet", "transform": transform, "unit": "samples/s",
         "contenders": peers + ["shardloader_1core"], "min_seconds": 0.0},
        {"name": "imagenet_decode_steady", "title": f"1b. Steady state of 1: each epoch "
         f"passes over the 1000 images {args.steady_repeat} times (repeated shard/file lists, "
         "streaming epoch_size, litdata subsample), so that the per-epoch pipeline fill and "
         "drain weigh less", "dataset": "imagenet", "transform": transform,
         "unit": "samples/s", "data_repeat": args.steady_repeat, "epochs": 2,
         "contenders": peers, "min_seconds": 0.0},
        {"name": "cifar_decode", "title": "2a. Many tiny files (CIFAR-10 test, 10,000 JPEGs of "
         f"32x32): decode to uint8 (32, 32, 3), batch {args.batch_size}; "
         f"epoch = {cifar_repeat} pass(es) over the files",
         "dataset": "cifar", "transform": {"kind": "center_crop", "size": 32},
         "data_repeat": cifar_repeat,
         "unit": "samples/s", "contenders": peers, "min_seconds": 1.0 if args.quick else 3.0},
        {"name": "cifar_bytes", "title": "2b. Many tiny files, no decode: the raw file bytes "
         f"into batches (values + offsets), batch {args.batch_size}; "
         f"epoch = {cifar_repeat} pass(es)",
         "dataset": "cifar", "transform": {"kind": "bytes"}, "unit": "samples/s",
         "data_repeat": cifar_repeat,
         "contenders": peers, "min_seconds": 1.0 if args.quick else 3.0},
        {"name": "imagenet_bytes", "title": "3. No decode: raw JPEG bytes of the imagenet "
         f"shards into batches (sl.Bytes), batch {args.batch_size}; "
         f"epoch = {bytes_repeat} passes over the 1000 samples",
         "dataset": "imagenet", "transform": {"kind": "bytes"}, "unit": "MB/s",
         "data_repeat": bytes_repeat,
         "contenders": peers + ["shardloader_1core"], "min_seconds": 1.0 if args.quick else 3.0},
    ]
    for s in out:
        for key, value in common.items():
            s.setdefault(key, value)
        s.setdefault("cores", cores)
        s["threads"] = s["workers"] = n
    if n == 1:  # shardloader itself is then the one-core row
        for s in out:
            if "contenders" in s:
                s["contenders"] = [c for c in s["contenders"] if c != "shardloader_1core"]
    if args.quick:
        out = [s for s in out if s["name"] != "imagenet_decode_steady"] \
            if not (args.only and "imagenet_decode_steady" in args.only) else out
    if args.only:
        wanted = set(args.only.split(","))
        out = [s for s in out if s["name"] in wanted]
    return out


def other_load(cores, seconds=0.5) -> float:
    """Fraction of ``cores`` busy with other work (nothing of ours runs now)."""
    from contenders import cores_busy_seconds
    t0, b0 = time.perf_counter(), cores_busy_seconds(cores)
    time.sleep(seconds)
    return (cores_busy_seconds(cores) - b0) / ((time.perf_counter() - t0) * len(cores))


def wait_for_quiet(cores, max_wait: float, threshold: float = 0.10) -> dict:
    """This machine is shared (other containers' processes are invisible to
    ps but show in /proc/stat): wait up to ``max_wait`` s for the cores to be
    idle before a run, and record what was seen."""
    start = time.perf_counter()
    load = other_load(cores)
    while load > threshold and time.perf_counter() - start < max_wait:
        load = other_load(cores, 1.0)
    return {"other_load_before": round(load, 3),
            "waited_s": round(time.perf_counter() - start, 1)}


def run_one(spec: dict, work: str, timeout: float, max_wait: float = 0) -> dict:
    """Runs contenders.py in a fresh process pinned to spec["cores"]."""
    quiet = wait_for_quiet(spec["cores"], max_wait)
    result = _run_one(spec, work, timeout)
    result.update(quiet)
    return result


def _run_one(spec: dict, work: str, timeout: float) -> dict:
    path = os.path.join(work, f"spec-{spec['name']}-{spec['contender']}.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    cores = set(spec["cores"])
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run([sys.executable, os.path.join(HERE, "contenders.py"), path],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              preexec_fn=lambda: os.sched_setaffinity(0, cores))
    except subprocess.TimeoutExpired:
        return {"status": f"failed: timed out after {timeout:.0f}s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
            if not result["status"].startswith("ok"):
                tail = proc.stderr.strip().splitlines()[-3:]
                if tail and result["status"].startswith("failed"):
                    result["stderr_tail"] = tail
            return result
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"status": f"failed: exit {proc.returncode}: {tail}"}


def contender_spec(scenario, contender, data):
    d = data[scenario["dataset"]]
    spec = {k: v for k, v in scenario.items() if k not in ("contenders", "title", "unit")}
    spec["contender"] = contender
    spec["runner"] = RUNNER.get(contender, contender)
    spec["data"] = {"shards": d["shards"], "files": d["files"], "ext": d["ext"],
                    "num_samples": d["num_samples"],
                    "mds": d["mds"], "litdata": d["litdata"]}
    if contender == "shardloader_1core":
        spec["cores"] = scenario["cores"][:1]
        spec["threads"] = spec["workers"] = 1
    return spec


DISTURBED = 0.05  # other processes' share of our cores above which a run is redone
STARTED = time.perf_counter()


def run_scenario(scenario, data, work, args):
    runs: dict[str, list[dict]] = {}
    if scenario.get("kind") == "reference":
        spec = dict(scenario, contender=scenario["runner"])
        if "dataset" in scenario:
            spec["data"] = {"files": data[scenario["dataset"]]["files"]}
        log(f"  {scenario['name']} ...")
        return {"result": run_one(spec, work, args.timeout, args.max_wait)}
    for repeat in range(args.repeats):
        for contender in scenario["contenders"]:
            d = data[scenario["dataset"]]
            spec = contender_spec(scenario, contender, data)
            pre = d.get({"streaming": "mds_status", "litdata": "litdata_status"}.get(
                contender, ""), "")
            pil = "" if scenario["transform"]["kind"] == "bytes" else " + PIL"
            label = LABELS[contender].format(
                threads=spec["threads"], workers=spec["workers"], pil=pil,
                ts="s" if spec["threads"] != 1 else "", ws="s" if spec["workers"] != 1 else "")
            if pre:
                runs.setdefault(contender, []).append({"status": pre, "label": label})
                continue
            for attempt in range(1 + args.retries):
                t0 = time.perf_counter()
                result = run_one(spec, work, args.timeout, args.max_wait)
                result["label"] = label
                rate = result.get("samples_per_s")
                other = result.get("other_load") or 0
                log(f"  {scenario['name']:<16} {contender:<18} "
                    f"{result['status'][:90] if result['status'] != 'ok' else f'{rate:,.0f} samples/s'}"
                    f"  other {100 * other:.0f}%  ({time.perf_counter() - t0:.1f}s)")
                runs.setdefault(contender, []).append(result)
                # A run that other processes disturbed is run again, while
                # the time budget lasts and only once the cores are idle
                # again (rerunning into the same load would only cost time);
                # the fastest run is reported.
                if (result["status"] != "ok" or other <= DISTURBED
                        or time.perf_counter() - STARTED > args.retry_budget
                        or attempt == args.retries):
                    break
                if wait_for_quiet(spec["cores"], args.max_wait)["other_load_before"] > DISTURBED:
                    log("    (cores still busy with other work: not rerun)")
                    break
    results = {}
    for contender, rs in runs.items():
        ok = [r for r in rs if r["status"] == "ok"]
        if not ok:
            results[contender] = {"status": rs[0]["status"], "label": rs[0]["label"], "runs": rs}
            continue
        # Best of the repeats: on a shared machine interference only slows
        # a run down, so the fastest run is the least disturbed one.
        best = max(ok, key=lambda r: r["samples_per_s"])
        results[contender] = {
            "status": "ok", "label": best["label"],
            "samples_per_s": best["samples_per_s"],
            "bytes_per_s": best["bytes_per_s"],
            "cold_samples_per_s": max((r["cold_samples_per_s"] or 0) for r in ok),
            "cpu_utilization": best["cpu_utilization"],
            "other_load": best.get("other_load"),
            "samples_per_s_runs": [r["samples_per_s"] for r in ok],
            "cores": sorted(best["affinity"]),
            "runs": rs,
        }
    return {"results": results}


# ------------------------------------------------------------ reporting --

def add_ratios(report):
    sc = report["scenarios"]
    refs = report["references"] = {}
    jpeg = sc.get("jpeg_single_core", {}).get("result", {})
    decoders = jpeg.get("decoders", {})
    full = {k: v for k, v in decoders.items() if k.endswith("_full") and v.get("status") == "ok"}
    ncores = len(report["machine"]["cores_used"])
    if full:
        best_name = max(full, key=lambda k: full[k]["items_per_s"])
        rate = full[best_name]["items_per_s"]
        refs["jpeg_full_decode_per_core"] = {"decoder": best_name, "images_per_s": rate,
                                             "cores": ncores, "images_per_s_all_cores": rate * ncores}
    scaled = decoders.get("turbojpeg_dct_pow2", {})
    if scaled.get("status") == "ok":
        refs["jpeg_dct_scaled_decode_per_core"] = {
            "images_per_s": scaled["items_per_s"], "cores": ncores,
            "images_per_s_all_cores": scaled["items_per_s"] * ncores}
    pil = decoders.get("pil_pipeline", {})
    if pil.get("status") == "ok":
        refs["pil_pipeline_per_core"] = {"images_per_s": pil["items_per_s"], "cores": ncores,
                                         "images_per_s_all_cores": pil["items_per_s"] * ncores}
    memcpy = sc.get("memcpy", {}).get("result", {})
    if memcpy.get("status") == "ok":
        refs["memcpy_per_core"] = {"bytes_per_s": memcpy["bytes_per_s"]}
    for name, s in sc.items():
        results = s.get("results")
        if not results:
            continue
        base = results.get("shardloader", {})
        base_rate = base.get("samples_per_s") if base.get("status") == "ok" else None
        for contender, r in results.items():
            if r["status"] == "ok" and base_rate:
                r["shardloader_speedup"] = base_rate / r["samples_per_s"]
        if not base_rate:
            continue
        s["shardloader_vs"] = {}
        if name in ("imagenet_decode", "imagenet_decode_steady"):
            for key in ("jpeg_full_decode_per_core", "jpeg_dct_scaled_decode_per_core",
                        "pil_pipeline_per_core"):
                if key in refs:
                    s["shardloader_vs"][key.replace("_per_core", "_x_cores")] = \
                        base_rate / refs[key]["images_per_s_all_cores"]
            one = results.get("shardloader_1core", {})
            if one.get("status") == "ok":
                for key in ("jpeg_full_decode_per_core", "jpeg_dct_scaled_decode_per_core"):
                    if key in refs:
                        s["shardloader_vs"]["1core_vs_" + key] = \
                            one["samples_per_s"] / refs[key]["images_per_s"]
        if name == "imagenet_bytes" and "memcpy_per_core" in refs:
            mem = refs["memcpy_per_core"]["bytes_per_s"]
            per_core = base["bytes_per_s"] / len(base["cores"])
            s["shardloader_vs"]["bytes_per_s_per_core"] = per_core
            s["shardloader_vs"]["per_core_vs_memcpy"] = per_core / mem
            one = results.get("shardloader_1core", {})
            if one.get("status") == "ok":
                s["shardloader_vs"]["1core_vs_memcpy"] = one["bytes_per_s"] / mem


def format_table(report) -> str:
    lines = []
    m = report["machine"]
    lines.append(f"machine: {m['cpu_model']}, {len(m['cores_used'])} cores used "
                 f"{m['cores_used']} of {m['cores_online']}; Python {m['python']}, "
                 f"torch {m['versions']['torch']}, shardloader {m['versions']['shardloader']} "
                 f"({(m['repo_commit'] or '?')[:8]}{', dirty' if m['repo_dirty'] else ''})")
    lines.append(f"mode: {'quick' if report['config']['quick'] else 'full'}; "
                 f"rates are the timed epochs after one warm-up epoch (best of "
                 f"{report['config']['repeats']} run(s)); "
                 "'cold' = the warm-up epoch incl. worker start; "
                 "CPU% = CPU time of the contender's process tree / (wall x cores); "
                 "other% = CPU time of everything else on those cores (other "
                 "containers included, from /proc/stat) / (wall x cores): "
                 "above ~5% the row was disturbed")
    refs = report["references"]
    sc = report["scenarios"]
    for name in PANELS:
        s = sc.get(name)
        if not s or "results" not in s:
            continue
        d = report["data"][s["dataset"]]
        lines.append("")
        lines.append(f"== {s['title']}")
        lines.append(f"   data: {d['num_samples']} samples, {d['encoded_bytes'] / 1e6:.1f} MB encoded "
                     f"({d['encoded_bytes'] / d['num_samples'] / 1e3:.1f} kB/sample); "
                     f"{len(d['shards'])} shards")
        header = (f"   {'contender':<44}{'samples/s':>11}{'MB/s':>9}{'cold/s':>9}"
                  f"{'CPU%':>6}{'other%':>7}   shardloader ÷ this")
        lines.append(header)
        for contender, r in s["results"].items():
            if r["status"] != "ok":
                lines.append(f"   {r['label']:<44}{r['status']}")
                continue
            # MB/s of encoded input (the files' bytes); for the no-decode
            # scenarios that is exactly the batches' payload.
            mbs = r["samples_per_s"] * d["encoded_bytes"] / d["num_samples"] / 1e6
            ratio = r.get("shardloader_speedup")
            note = ""
            if contender == "shardloader_1core" and ratio:
                note = "  (= scaling from 1 to all cores)"
            ratio_text = f"   {ratio:>6.2f}x{note}" if ratio else ""
            lines.append(f"   {r['label']:<44}{r['samples_per_s']:>11,.0f}{mbs:>9,.1f}"
                         f"{r['cold_samples_per_s']:>9,.0f}{100 * r['cpu_utilization']:>5.0f}%"
                         f"{100 * (r.get('other_load') or 0):>6.0f}%" + ratio_text)
        vs = s.get("shardloader_vs", {})
        if name in ("imagenet_decode", "imagenet_decode_steady"):
            for key, label in (("jpeg_full_decode_per_core", "libjpeg-turbo full-size decode"),
                               ("jpeg_dct_scaled_decode_per_core",
                                "libjpeg-turbo at the 1/2^n DCT scale shardloader picks"),
                               ("pil_pipeline_per_core", "PIL pipeline (1 core)")):
                if key in refs:
                    ref = refs[key]
                    ratio = vs.get(key.replace("_per_core", "_x_cores"))
                    lines.append(f"   reference: {label}: {ref['cores']} cores x "
                                 f"{ref['images_per_s']:,.0f}/s = {ref['images_per_s_all_cores']:,.0f}/s"
                                 + (f"  -> shardloader at {ratio:.2f}x of it" if ratio else ""))
            for key, label in (("1core_vs_jpeg_full_decode_per_core", "full decode"),
                               ("1core_vs_jpeg_dct_scaled_decode_per_core", "DCT-scaled decode")):
                if key in vs:
                    lines.append(f"   shardloader 1 thread on 1 core vs single-core {label}: "
                                 f"{vs[key]:.2f}x")
        if name == "imagenet_bytes" and "per_core_vs_memcpy" in vs:
            mem = refs["memcpy_per_core"]["bytes_per_s"]
            lines.append(f"   reference: memcpy (numpy copyto of 256 MiB), 1 core: {mem / 1e6:,.0f} MB/s")
            lines.append(f"   shardloader: {vs['bytes_per_s_per_core'] / 1e6:,.0f} MB/s per core "
                         f"= {vs['per_core_vs_memcpy']:.3f}x memcpy"
                         + (f"; 1 thread on 1 core: {vs['1core_vs_memcpy']:.3f}x memcpy"
                            if "1core_vs_memcpy" in vs else ""))
    jpeg = sc.get("jpeg_single_core", {}).get("result")
    if jpeg:
        lines.append("")
        lines.append(f"== {sc['jpeg_single_core']['title']}")
        if jpeg.get("status") != "ok":
            lines.append(f"   {jpeg.get('status')}")
        else:
            lines.append(f"   {jpeg['images']} images, {jpeg['megapixels']:.0f} Mpixel, "
                         f"{jpeg['encoded_bytes'] / 1e6:.1f} MB")
            lines.append(f"   {'decoder':<24}{'images/s/core':>14}{'Mpix/s':>9}{'MB/s':>8}   library")
            for name, r in jpeg["decoders"].items():
                if r.get("status") != "ok":
                    lines.append(f"   {name:<24}{r.get('status')}")
                    continue
                lines.append(f"   {name:<24}{r['items_per_s']:>14,.0f}{r['megapixels_per_s']:>9,.0f}"
                             f"{r['bytes_per_s'] / 1e6:>8,.1f}   {r['library']}")
    mem = sc.get("memcpy", {}).get("result")
    if mem and mem.get("status") == "ok":
        lines.append("")
        lines.append("== memcpy, 1 core: " + ", ".join(
            f"{k} {v['bytes_per_s'] / 1e6:,.0f} MB/s" for k, v in mem["copies"].items()))
    unavailable = []
    for s in sc.values():
        for contender, r in s.get("results", {}).items():
            if r["status"] != "ok":
                unavailable.append(f"   {s['name']}/{contender}: {r['status']}")
    if unavailable:
        lines.append("")
        lines.append("== not available / failed")
        lines.extend(unavailable)
    return "\n".join(lines)


def plot(report, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except Exception as error:
        log(f"no plot: {error}")
        return None
    sc = report["scenarios"]
    refs = report["references"]
    panels = [n for n in PANELS if n in sc and "results" in sc[n]]
    has_jpeg = sc.get("jpeg_single_core", {}).get("result", {}).get("status") == "ok"
    count = len(panels) + has_jpeg
    if not count:
        return None
    cols = 2
    rows = (count + 1) // 2
    fig, axes = plt.subplots(rows, cols, figsize=(14, 3.4 * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[count:]:
        ax.axis("off")
    for ax, name in zip(axes, panels):
        s = sc[name]
        d = report["data"][s["dataset"]]
        mb = name == "imagenet_bytes"
        labels, values, colors = [], [], []
        for contender, r in s["results"].items():
            labels.append(r["label"].replace(" (", "\n("))
            if r["status"] == "ok":
                values.append(r["bytes_per_s"] / 1e6 if mb else r["samples_per_s"])
            else:
                values.append(0)
                labels[-1] += " (n/a)"
            colors.append("tab:blue" if contender.startswith("shardloader") else "tab:gray")
        y = range(len(labels))[::-1]
        ax.barh(list(y), values, color=colors)
        ax.set_yticks(list(y))
        ax.set_yticklabels(labels, fontsize=8)
        for yy, v, (contender, r) in zip(y, values, s["results"].items()):
            if v:
                txt = f"{v:,.0f}"
                if r.get("shardloader_speedup") and contender != "shardloader":
                    txt += f"  (sl {r['shardloader_speedup']:.2f}x)"
                if (r.get("other_load") or 0) > DISTURBED:
                    txt += f"  [disturbed: other {100 * r['other_load']:.0f}%]"
                ax.text(v, yy, " " + txt, va="center", fontsize=7)
        lines = []
        if name in ("imagenet_decode", "imagenet_decode_steady"):
            for key, style, label in (("jpeg_full_decode_per_core", "--",
                                       "full-size decode x cores"),
                                      ("jpeg_dct_scaled_decode_per_core", ":",
                                       "1/2^n-DCT decode x cores")):
                if key in refs:
                    lines.append((refs[key]["images_per_s_all_cores"], style, label))
        if mb and "memcpy_per_core" in refs:
            lines.append((refs["memcpy_per_core"]["bytes_per_s"] / 1e6, "--", "memcpy, 1 core"))
        for x, style, label in lines:
            ax.axvline(x, color="tab:red", ls=style, label=f"{label}: {x:,.0f}")
        if lines:
            ax.legend(fontsize=7, loc="center right" if mb else "lower right", framealpha=0.9,
                      title=None if mb else "libjpeg-turbo, 1 core", title_fontsize=7)
        ax.set_xlabel("MB/s" if mb else "samples/s")
        ax.set_title(s["title"].split(":")[0] + ": " + s["name"], fontsize=9)
        ax.set_xlim(0, max(values + [x for x, _, _ in lines] + [1]) * (1.3 if mb else 1.5))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))
    if has_jpeg:
        ax = axes[len(panels)]
        dec = {k: v for k, v in sc["jpeg_single_core"]["result"]["decoders"].items()
               if v.get("status") == "ok"}
        names = list(dec)[::-1]
        ax.barh(names, [dec[n]["items_per_s"] for n in names], color="tab:red")
        for i, n in enumerate(names):
            ax.text(dec[n]["items_per_s"], i, f" {dec[n]['items_per_s']:,.0f}", va="center", fontsize=7)
        ax.set_xlabel("images/s on one core")
        ax.set_title("4. single-core JPEG decode (imagenet-sample)", fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlim(0, max(dec[n]["items_per_s"] for n in names) * 1.3)
    m = report["machine"]
    fig.suptitle(f"shardloader e2e ({'quick' if report['config']['quick'] else 'full'}): "
                 f"{m['cpu_model']}, {len(m['cores_used'])} cores; {m['date_utc']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="one timed epoch per contender, shorter references (~2-3 min)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"),
                        help="where e2e[-quick].json and .png go (default: benchmarks/e2e/results)")
    parser.add_argument("--data", default=os.environ.get(
        "SHARDLOADER_DATA", os.path.join(os.path.dirname(REPO), "shared", "data")),
        help="the shared real-data folder (default: ../shared/data beside the repo)")
    parser.add_argument("--work", default=None,
                        help="work directory for shards and converted data (default: a new "
                             "temporary directory, deleted afterwards)")
    parser.add_argument("--cores", default=None,
                        help="comma-separated CPU ids to pin every contender to "
                             "(default: all this process may use)")
    parser.add_argument("--transform", default="center_crop",
                        choices=["center_crop", "random_resized"],
                        help="scenario 1's transform (random_resized needs shardloader's "
                             "resize='random_resized_crop'; default center_crop)")
    parser.add_argument("--size", type=int, default=224, help="scenario 1 output size")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs (full mode)")
    parser.add_argument("--max-seconds", type=float, default=10.0,
                        help="full mode: stop a contender's timed epochs after this many "
                             "seconds (at least one epoch; quick: 3)")
    parser.add_argument("--steady-repeat", type=int, default=3,
                        help="passes over the data per epoch in scenario 1b (default 3)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="runs of each contender, the fastest reported (default 1)")
    parser.add_argument("--only", default=None,
                        help="comma-separated scenarios: jpeg_single_core,memcpy,"
                             "imagenet_decode,imagenet_decode_steady,cifar_decode,cifar_bytes,imagenet_bytes")
    parser.add_argument("--timeout", type=float, default=300, help="per-contender limit (s)")
    parser.add_argument("--retries", type=int, default=None,
                        help="rerun a contender this many times when other processes took "
                             f"more than {DISTURBED:.0%}% of the cores (default 2; quick 1), "
                             "while --retry-budget lasts")
    parser.add_argument("--retry-budget", type=float, default=None,
                        help="no more reruns after this many seconds of the whole run "
                             "(default 480; quick 150)")
    parser.add_argument("--max-wait", type=float, default=None,
                        help="before each run, wait up to this many seconds for other "
                             "processes to leave the cores (default 10; quick 5)")
    parser.add_argument("--replot", metavar="JSON", default=None,
                        help="only redraw the plot and reprint the table of a results JSON")
    args = parser.parse_args()
    if args.replot:
        with open(args.replot) as f:
            report = json.load(f)
        png = plot(report, os.path.splitext(args.replot)[0] + ".png")
        print(format_table(report))
        print(f"\nwrote {png}")
        return 0
    args.repeats = args.repeats or 1
    if args.max_wait is None:
        args.max_wait = 5.0 if args.quick else 10.0
    if args.retries is None:
        args.retries = 1 if args.quick else 2
    if args.retry_budget is None:
        args.retry_budget = 150.0 if args.quick else 480.0
    cores = ([int(c) for c in args.cores.split(",")] if args.cores
             else sorted(os.sched_getaffinity(0)))
    started = time.perf_counter()
    work = args.work or tempfile.mkdtemp(prefix="shardloader-e2e-")
    os.makedirs(work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    try:
        log(f"work dir {work}; cores {cores}")
        report = {"machine": machine_info(cores),
                  "config": {"quick": args.quick, "cores": cores, "batch_size": args.batch_size,
                             "transform": args.transform, "size": args.size,
                             "epochs": 1 if args.quick else args.epochs,
                             "repeats": args.repeats, "command": " ".join(sys.argv)}}
        data = prepare(args, work)
        report["data"] = {k: {kk: vv for kk, vv in v.items() if kk not in ("files",)}
                          for k, v in data.items()}
        for d in report["data"].values():
            d["shards"] = [os.path.basename(s) for s in d["shards"]]
        report["scenarios"] = {}
        for scenario in scenarios(args, data, cores):
            log(f"scenario {scenario['name']}")
            out = run_scenario(scenario, data, work, args)
            meta = {k: scenario[k] for k in ("name", "title", "cores", "transform", "unit",
                                              "dataset", "epochs", "warmup_epochs",
                                              "min_seconds", "batch_size")
                    if k in scenario}
            report["scenarios"][scenario["name"]] = {**meta, **out}
        add_ratios(report)
        report["total_seconds"] = time.perf_counter() - started
        stem = "e2e-quick" if args.quick else "e2e"
        if args.cores:  # not the default: say which cores in the file name
            stem += "-cores" + "_".join(map(str, cores))
        if args.transform != "center_crop":
            stem += "-" + args.transform
        json_path = os.path.join(args.out, stem + ".json")
        with open(json_path, "w") as f:
            json.dump(report, f, indent=1)
        png = plot(report, os.path.join(args.out, stem + ".png"))
        print(format_table(report))
        print(f"\nwrote {json_path}" + (f" and {png}" if png else "")
              + f" in {report['total_seconds']:.0f}s")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
