#!/usr/bin/env python3
"""Regenerates the fuzz targets' seed corpora in tests/fuzz/corpus/<target>/.

Small, deterministic files (a few KB each): tar shards in the formats the
reader handles (ustar, GNU long names, PAX local/global/sparse records, a
base-256 size), WebDataset samples, DALI `.idx` text followed by its shard
(shard_index_fuzzer's input format), `.npy` arrays, tiny JPEG/PNG images,
and HTTP/S3 answers in remote_fuzzer's text format. Needs numpy and Pillow.
Run from anywhere: python3 tests/fuzz/make_corpus.py
"""
import io
import pathlib
import shutil
import tarfile

import numpy as np
from PIL import Image

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"


def tar_bytes(members, fmt=tarfile.USTAR_FORMAT, pax_headers=None):
    """members: (name, bytes | None for a directory, extra TarInfo fields)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, pax_headers=pax_headers or {}) as tar:
        for name, data, extra in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            for key, value in (extra or {}).items():
                setattr(info, key, value)
            if data is None:
                if info.type == tarfile.REGTYPE:
                    info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    # Drop tarfile's padding to its 10 KiB record: the end marker (two zero
    # blocks) is enough, and small seeds fuzz faster.
    archive = buf.getvalue()
    end = len(archive.rstrip(b"\0"))
    return archive[:(end + 511) // 512 * 512 + 1024]


def checksum(block):
    block = bytearray(block)
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block[:512])
    return bytes(block)


def base256_size(archive):
    """The first member's size field rewritten in GNU base-256."""
    data = bytearray(archive)
    size = int(data[124:136].rstrip(b"\0 ") or b"0", 8)
    data[124:136] = b"\x80" + size.to_bytes(11, "big")
    data[0:512] = checksum(data[0:512])
    return bytes(data)


def samples(n, fields):
    members = []
    for i in range(n):
        for ext, data in fields(i):
            members.append((f"sample{i:04d}.{ext}", data, None))
    return members


def jpeg(width, height, **kw):
    rng = np.random.default_rng(width * 31 + height)
    img = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=kw.pop("quality", 75), **kw)
    return buf.getvalue()


def png(width, height, mode="RGB"):
    rng = np.random.default_rng(width * 17 + height)
    shape = (height, width) if mode in ("L", "P", "1") else (height, width, len(mode))
    img = Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8))
    if mode != img.mode:
        img = img.convert(mode)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def npy(array, fortran=False):
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(array) if fortran else array)
    return buf.getvalue()


def tar_corpus():
    plain = samples(2, lambda i: [("txt", b"hello %d" % i), ("cls", b"%d" % i)])
    long_name = "d/" + "x" * 120 + ".txt"
    pax_sparse0 = {"GNU.sparse.size": "1024", "GNU.sparse.numblocks": "1",
                   "GNU.sparse.offset": "0", "GNU.sparse.numbytes": "5"}
    pax_sparse1 = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                   "GNU.sparse.name": "a.bin", "GNU.sparse.realsize": "1024"}
    sparse1_data = b"1\n0\n5\n".ljust(512, b"\0") + b"hello"
    return {
        "ustar.tar": tar_bytes(plain),
        "gnu_longname.tar": tar_bytes([(long_name, b"long", None),
                                       ("l", None, {"type": tarfile.SYMTYPE,
                                                    "linkname": "y" * 130})],
                                      fmt=tarfile.GNU_FORMAT),
        "pax_longname.tar": tar_bytes([(long_name, b"long", None),
                                       ("u\u00e9.txt", b"utf8", None)], fmt=tarfile.PAX_FORMAT),
        "pax_global.tar": tar_bytes(plain, fmt=tarfile.PAX_FORMAT,
                                    pax_headers={"comment": "global", "path": "g.txt"}),
        "pax_sparse00.tar": tar_bytes([("a.bin", b"hello", {"pax_headers": pax_sparse0})],
                                      fmt=tarfile.PAX_FORMAT),
        "pax_sparse10.tar": tar_bytes([("GNUSparseFile.0/a.bin", sparse1_data,
                                        {"pax_headers": pax_sparse1})], fmt=tarfile.PAX_FORMAT),
        "base256_size.tar": base256_size(tar_bytes([("a.txt", b"base-256 size", None)])),
        "links_dirs.tar": tar_bytes([("d", None, None),
                                     ("d/a.txt", b"a", None),
                                     ("d/s.txt", b"", {"type": tarfile.SYMTYPE, "linkname": "a.txt"}),
                                     ("d/h.txt", b"", {"type": tarfile.LNKTYPE, "linkname": "d/a.txt"}),
                                     ("fifo", b"", {"type": tarfile.FIFOTYPE})]),
        "empty.tar": b"\0" * 1024,
        "truncated.tar": tar_bytes(plain)[:700],
        "trailing_garbage.tar": tar_bytes(plain) + b"garbage",
    }


def wds_corpus():
    tiny_jpg = jpeg(8, 8)
    return {
        "wds_jpg_cls.tar": tar_bytes(samples(3, lambda i: [("jpg", tiny_jpg), ("cls", b"%d" % i),
                                                          ("json", b'{"i": %d}' % i)])),
        "wds_multidot.tar": tar_bytes(samples(2, lambda i: [("seg.png", b"p"), ("JPG", b"j")])),
        "wds_dirs.tar": tar_bytes([("a/b/k1.txt", b"1", None), ("a/b/k1.cls", b"1", None),
                                   ("a/c/k1.txt", b"2", None), ("k 2.txt", b"space", None)]),
        "wds_repeated_ext.tar": tar_bytes([("k.txt", b"1", None), ("k.txt", b"2", None)]),
        "wds_no_ext.tar": tar_bytes([("README", b"x", None), ("k.txt", b"1", None)]),
    }


def idx_for(archive):
    """DALI v1.2 index text of `archive`, from python's tarfile."""
    groups = {}
    order = []
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            base = m.name.rsplit("/", 1)[-1]
            if "." not in base:
                continue
            dot = m.name.rfind("/") + 1 + base.index(".")
            key, ext = m.name[:dot], m.name[dot + 1:]
            if key not in groups:
                groups[key] = []
                order.append(key)
            esc = lambda s: s.replace("\\", "\\\\").replace(" ", "\\s").replace("\n", "\\n")
            groups[key].append(f"{esc(ext)} {m.offset_data} {m.size} {esc(m.name)}")
    lines = [f"v1.2 {len(order)}"] + [" ".join(groups[k]) for k in order]
    return "\n".join(lines) + "\n"


def index_corpus(wds):
    out = {}
    for name, archive in wds.items():
        if name == "wds_repeated_ext.tar":
            continue
        out[name.replace(".tar", ".idx+tar")] = idx_for(archive).encode() + b"\n#shard\n" + archive
    a = wds["wds_jpg_cls.tar"]
    out["v11.idx+tar"] = b"v1.1 1\njpg 512 %d cls 2048 1\n#shard\n" % len(jpeg(8, 8)) + a
    out["huge_size.idx+tar"] = b"v1.2 1\njpg 512 9223372036854775295 k.jpg\n#shard\n" + a
    out["stale_offset.idx+tar"] = b"v1.2 1\njpg 1024 10 k.jpg\n#shard\n" + a
    out["escaped.idx"] = b"v1.2 1\njpg 512 10 a\\sb.jpg txt 1536 3 a\\sb.txt\n"
    out["count_mismatch.idx"] = b"v1.2 5\njpg 512 10 a.jpg\n"
    return out


def npy_corpus():
    return {
        "u8_4x4.npy": npy(np.arange(16, dtype=np.uint8).reshape(4, 4)),
        "f32_2x3.npy": npy(np.ones((2, 3), np.float32)),
        "f32_2x3_fortran.npy": npy(np.arange(6, dtype=np.float32).reshape(2, 3), fortran=True),
        "i64_3.npy": npy(np.array([1, 2, 3], np.int64)),
        "f32_scalar.npy": npy(np.float32(1.5)),
        "f16_be.npy": npy(np.arange(4, dtype=">f2")),
        "i16_3x2x2_fortran.npy": npy(np.arange(12, dtype=np.int16).reshape(3, 2, 2), fortran=True),
        "bool_5.npy": npy(np.array([True, False, True, True, False])),
        "empty_0x3.npy": npy(np.zeros((0, 3), np.float64)),
        "v2_header.npy": b"\x93NUMPY\x02\x00" + (12).to_bytes(4, "little")
                         + b"{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }".ljust(
                             52, b" ")[:52] + b"\n" + b"\x01\x02",
        "truncated.npy": npy(np.ones((4, 4), np.float32))[:100],
    }


def image_corpus():
    return {
        "rgb_16x12.jpg": jpeg(16, 12),
        "rgb_40x9_progressive.jpg": jpeg(40, 9, progressive=True),
        "rgb_17x23_444.jpg": jpeg(17, 23, subsampling=0, quality=90),
        "gray_8x8.jpg": (lambda: (lambda b: (Image.open(io.BytesIO(jpeg(8, 8))).convert("L")
                                              .save(b, "JPEG"), b.getvalue())[1])(io.BytesIO()))(),
        "truncated.jpg": jpeg(16, 16)[:-40],
        "rgb_10x7.png": png(10, 7),
        "rgba_5x5.png": png(5, 5, "RGBA"),
        "gray_9x3.png": png(9, 3, "L"),
        "palette_6x6.png": png(6, 6, "P"),
        "truncated.png": png(12, 12)[:-30],
    }


def answer(status, headers=(), body=b"", cut=None):
    head = (b"%d" % status) + (b" cut %d" % cut if cut is not None else b"")
    lines = [head] + [f"{k}: {v}".encode() for k, v in headers]
    return b"\n".join(lines) + b"\n\n" + body


def remote_corpus():
    obj = bytes(range(256)) * 4
    head = answer(200, [("content-length", len(obj)), ("etag", '"e1"')])
    ranged = lambda a, b: answer(206, [("content-range", f"bytes {a}-{b}/{len(obj)}"),
                                       ("content-length", b - a + 1), ("etag", '"e1"')], obj[a:b + 1])
    reads = [ranged(0, 63), ranged(512, 611), ranged(1023, 1023),
             answer(416, [("content-range", f"bytes */{len(obj)}")]), ranged(0, 1023)]
    sep = b"\n--\n"
    listing = (b"<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
               b"<Contents><Key>data/a.tar</Key></Contents><Contents><Key>data/a.idx</Key>"
               b"</Contents><NextContinuationToken>tok+1=</NextContinuationToken></ListBucketResult>")
    last = (b"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>data/b &amp; c.tar"
            b"</Key></Contents></ListBucketResult>")
    return {
        "http_ok": b"http\n" + sep.join([head] + reads),
        "http_retry": b"http\n" + sep.join([answer(503, body=b"busy"), b"error", head,
                                            ranged(0, 63), answer(206, [("etag", '"e1"')],
                                                                  obj[:64], cut=10)]),
        "http_no_length": b"http\n" + answer(200, [("etag", '"e1"')]),
        "http_changed": b"http\n" + sep.join([head, answer(412), answer(206, [("etag", '"e2"')],
                                                                         obj[:64])]),
        "http_404": b"http\n" + answer(404, body=b"<Error><Code>NoSuchKey</Code></Error>"),
        "http_403": b"http\n" + answer(403, body=b"<Error><Code>AccessDenied</Code></Error>"),
        "http_200_for_range": b"http\n" + sep.join([head, answer(200, [("etag", '"e1"')], obj)]),
        "s3_object": b"s3\n" + sep.join([head] + reads),
        "list_two_pages": b"list\n" + sep.join([answer(200, body=listing), answer(200, body=last)]),
        "list_empty": b"list\n" + answer(200, body=b"<ListBucketResult><KeyCount>0</KeyCount>"
                                                  b"</ListBucketResult>"),
        "list_error": b"list\n" + answer(500, body=b"<Error><Code>InternalError</Code></Error>"),
    }


def main():
    tars = tar_corpus()
    wds = wds_corpus()
    corpora = {
        "tar_reader": {**tars, **wds},
        "sample_reader": {**wds, **{k: v for k, v in tars.items()}},
        "shard_index": index_corpus(wds),
        "npy": npy_corpus(),
        "image": image_corpus(),
        "remote": remote_corpus(),
    }
    for target, files in corpora.items():
        folder = CORPUS / target
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        print(f"{target}: {len(files)} files, {sum(map(len, files.values()))} bytes")


if __name__ == "__main__":
    main()
