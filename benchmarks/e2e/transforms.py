"""The image transform, as a parameter shared by every contender.

A transform is a small JSON-able dict, e.g. ``{"kind": "center_crop", "size": 224}``
or ``{"kind": "random_resized", "size": 224, "flip": True}``. The same dict
becomes

* for shardloader, an ``sl.Image`` field (:func:`shardloader_image_field`):
  ``resize="center_crop"`` or ``resize="random_resized_crop", flip=...``;
* for every PIL-based peer (torch DataLoader over files, webdataset, MosaicML
  Streaming, LitData), a function ``bytes -> uint8 (H, W, 3)`` built with
  PIL (:func:`pil_transform`), written by hand because torchvision is not
  installed.

Both do the same work for the same output:

``center_crop``
    torchvision's ``Resize(S)`` + ``CenterCrop(S)`` (scale the shorter side
    to S, take the centre), done as one antialiased bilinear resample of the
    centred region (PIL's ``resize(box=...)``), which is what shardloader does.
``random_resized``
    torchvision's ``RandomResizedCrop(S, scale=(0.08, 1), ratio=(3/4, 4/3))``
    (ten tries, then the centre crop of the clamped aspect ratio), then a
    horizontal flip with probability 1/2 when ``flip``.

JPEGs are decoded at a reduced DCT scale when the output allows it: PIL's
``draft`` (1/2, 1/4, 1/8) for the PIL paths, libjpeg-turbo's scales in
shardloader (k/8 in early builds, 1/2, 1/4, 1/8 since). An image already of
the output size is not resampled.
"""

from __future__ import annotations

import io
import math
import random

CENTER_CROP = {"kind": "center_crop", "size": 224}
RANDOM_RESIZED = {"kind": "random_resized", "size": 224, "flip": True}


def describe(transform: dict) -> str:
    if transform["kind"] == "bytes":
        return "no decode (raw bytes)"
    size = transform["size"]
    if transform["kind"] == "center_crop":
        return f"decode + shorter-side resize + center crop to {size}x{size} (bilinear, antialiased)"
    flip = " + random flip" if transform.get("flip") else ""
    return f"decode + RandomResizedCrop to {size}x{size}{flip} (bilinear, antialiased)"


# ------------------------------------------------------------- shardloader --

def shardloader_image_field(transform: dict, ext: str = "jpg"):
    """The ``sl.Image`` (or ``sl.Bytes``) field for ``transform``.

    Raises NotImplementedError when this shardloader build lacks the mode
    (the random-resized crop is being added)."""
    import shardloader as sl
    if transform["kind"] == "bytes":
        return sl.Bytes(ext)
    if transform["kind"] == "center_crop":
        return sl.Image(ext, size=transform["size"], resize="center_crop")
    if transform["kind"] == "random_resized":
        flip = bool(transform.get("flip"))
        errors = []
        # The spelling shipped (resize="random_resized_crop"), then the one
        # first planned (crop="random_resized").
        for kwargs in ({"resize": "random_resized_crop", "scale": (0.08, 1.0),
                        "ratio": (3 / 4, 4 / 3), "flip": flip},
                       {"crop": "random_resized", "flip": flip}):
            try:
                return sl.Image(ext, size=transform["size"], **kwargs)
            except (TypeError, ValueError) as error:  # InvalidArgumentError is a ValueError
                errors.append(f"{type(error).__name__}: {error}")
        raise NotImplementedError(
            "this shardloader build has no random resized crop (" + "; ".join(errors) + ")")
    raise ValueError(f"unknown transform {transform!r}")


# --------------------------------------------------------------------- PIL --

def pil_transform(transform: dict, seed: int = 0):
    """``bytes -> numpy uint8 (H, W, 3)`` (or the bytes themselves for
    ``kind == "bytes"``)."""
    kind = transform["kind"]
    if kind == "bytes":
        return lambda data: data
    size = transform["size"]
    out_h, out_w = (size, size) if isinstance(size, int) else tuple(size)
    if kind == "center_crop":
        return lambda data: _decode_region(data, out_w, out_h, _center_box, None)
    if kind == "random_resized":
        rng = random.Random(seed)
        flip = bool(transform.get("flip"))

        def apply(data):
            return _decode_region(data, out_w, out_h,
                                  lambda w, h: _random_resized_box(w, h, rng),
                                  rng if flip else None)
        return apply
    raise ValueError(f"unknown transform {transform!r}")


def _center_box(width, height, out_w, out_h):
    scale = max(out_w / width, out_h / height)
    region_w, region_h = out_w / scale, out_h / scale
    return ((width - region_w) / 2, (height - region_h) / 2,
            (width + region_w) / 2, (height + region_h) / 2)


def _random_resized_box(width, height, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision.transforms.RandomResizedCrop.get_params, in pixels."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            x = rng.randint(0, width - w)
            y = rng.randint(0, height - h)
            return (x, y, x + w, y + h)
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    x, y = (width - w) // 2, (height - h) // 2
    return (x, y, x + w, y + h)


def _decode_region(data, out_w, out_h, box_of, flip_rng):
    from PIL import Image
    import numpy as np
    image = Image.open(io.BytesIO(data))
    full_w, full_h = image.size
    if box_of is _center_box:
        box = _center_box(full_w, full_h, out_w, out_h)
    else:
        box = box_of(full_w, full_h)
    if image.format == "JPEG":
        # The smallest 1/2^n DCT scale at which the box still covers the output.
        box_w, box_h = box[2] - box[0], box[3] - box[1]
        image.draft("RGB", (max(1, math.ceil(full_w * out_w / box_w)),
                            max(1, math.ceil(full_h * out_h / box_h))))
    image = image.convert("RGB")
    width, height = image.size
    if (width, height) != (full_w, full_h):
        sx, sy = width / full_w, height / full_h
        box = (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)
    box = (max(0.0, box[0]), max(0.0, box[1]), min(float(width), box[2]),
           min(float(height), box[3]))  # float rounding at the edges
    if not (box == (0, 0, width, height) and (width, height) == (out_w, out_h)):
        image = image.resize((out_w, out_h), Image.BILINEAR, box=box)
    if flip_rng is not None and flip_rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    return np.asarray(image)
