"""Field declarations: which sample files become which batch tensors.

Each field reads the first of its extensions present in a sample (``"jpg;png"``
reads ``.jpg``, else ``.png``), as WebDataset's ``to_tuple`` does. In a batch
of ``B`` samples:

=============  =============================================================
field          batch value
=============  =============================================================
``Bytes``      :class:`Ragged` ``(values uint8 (N,), offsets int64 (B+1,))``
``Text``       ``list[str]`` of length ``B`` (UTF-8, validated)
``Int``        ``int64 (B,)``, parsed from ASCII text such as ``.cls``
``Npy``        ``dtype (B, *shape)`` from ``.npy`` arrays of that shape/dtype
``Image``      ``uint8 (B, H, W, 3)`` RGB, or ``(B, 3, H, W)`` with
               ``layout="chw"``; JPEG or PNG
=============  =============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

from . import _core
from .errors import InvalidArgumentError

__all__ = ["Field", "Bytes", "Text", "Int", "Npy", "Image", "Ragged"]


def _extensions(ext: str) -> list[str]:
    return [e.strip().lower().lstrip(".") for e in ext.split(";") if e.strip()]


@dataclass(frozen=True)
class Field:
    """Base class: ``ext`` is one extension or several joined by ``;``."""

    ext: str

    _kind = None

    def spec(self, name: str) -> _core.FieldSpec:
        """The C++ declaration of this field under batch key ``name``.

        Raises InvalidArgumentError for a malformed declaration."""
        spec = _core.FieldSpec()
        spec.name = name
        spec.kind = self._kind
        spec.extensions = _extensions(self.ext)
        self._configure(spec)
        spec.validate()
        return spec

    def _configure(self, spec: _core.FieldSpec) -> None:
        pass


@dataclass(frozen=True)
class Bytes(Field):
    """Raw bytes of each sample's file, as a :class:`Ragged` batch."""

    _kind = _core.FieldKind.BYTES


@dataclass(frozen=True)
class Text(Field):
    """UTF-8 text of each sample's file, as ``list[str]``."""

    _kind = _core.FieldKind.TEXT


@dataclass(frozen=True)
class Int(Field):
    """An integer label written as ASCII text (``.cls``): ``int64 (B,)``."""

    _kind = _core.FieldKind.INT


@dataclass(frozen=True)
class Npy(Field):
    """A NumPy ``.npy`` array of fixed ``shape`` and ``dtype`` per sample.

    The batch is ``dtype (B, *shape)``. Fortran-order arrays are accepted.
    A sample whose array has another shape or dtype raises DataLossError."""

    shape: Sequence[int] = ()
    dtype: str = "float32"

    _kind = _core.FieldKind.NPY

    def _configure(self, spec):
        spec.shape = [int(d) for d in self.shape]
        spec.dtype = str(self.dtype)


@dataclass(frozen=True)
class Image(Field):
    """A JPEG or PNG image, decoded to RGB, cropped and resized to a fixed size.

    Args:
        ext: extension(s), e.g. ``"jpg;jpeg;png"``.
        size: output size in pixels, ``S`` for ``S x S`` or ``(H, W)``.
        resize: how the image becomes ``H x W``:

            - ``"center_crop"`` (evaluation): scale the shorter side to fit,
              then take the centre (torchvision's ``Resize`` +
              ``CenterCrop``);
            - ``"random_resized_crop"`` (training): torchvision's
              ``RandomResizedCrop(size, scale, ratio)``: a random box of
              ``scale`` times the area and aspect ratio in ``ratio``
              (log-uniform), resized to ``H x W``;
            - ``"stretch"``: scale to ``H x W`` ignoring the aspect ratio.

            Resampling is PIL's antialiased ``BILINEAR``.
        scale: ``(min, max)`` area fraction for ``"random_resized_crop"``.
        ratio: ``(min, max)`` aspect ratio (width / height) for it.
        flip: mirror horizontally with probability 0.5.
        layout: ``"hwc"`` gives ``uint8 (B, H, W, 3)``, ``"chw"`` gives
            ``uint8 (B, 3, H, W)``.

    Random choices derive from (loader seed, epoch, shard, sample index):
    reproducible whatever the thread count or world size, and new each
    epoch. JPEGs are decoded at a reduced DCT scale (1/2, 1/4, 1/8) when the
    output is much smaller, and only the rows and columns the crop needs are
    decoded. Grayscale, palette, RGBA, 16-bit and CMYK images become 8-bit
    RGB. EXIF orientation is not applied (as in PIL's ``Image.open``).

    Raises InvalidArgumentError for a bad size, mode, range or layout."""

    size: int | tuple[int, int] = 224
    resize: str = "center_crop"
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: bool = False
    layout: str = "hwc"

    _kind = _core.FieldKind.IMAGE

    def _configure(self, spec):
        modes = {"center_crop": _core.ResizeMode.CENTER_CROP,
                 "random_resized_crop": _core.ResizeMode.RANDOM_RESIZED_CROP,
                 "stretch": _core.ResizeMode.STRETCH}
        layouts = {"hwc": _core.Layout.HWC, "chw": _core.Layout.CHW}
        if self.resize not in modes:
            raise InvalidArgumentError(f"resize must be one of {sorted(modes)}, got {self.resize!r}")
        if self.layout not in layouts:
            raise InvalidArgumentError(f"layout must be one of {sorted(layouts)}, got {self.layout!r}")
        height, width = ((self.size, self.size) if isinstance(self.size, int)
                         else self.size)
        image = spec.image
        image.height, image.width = int(height), int(width)
        image.resize = modes[self.resize]
        image.layout = layouts[self.layout]
        image.min_scale, image.max_scale = (float(v) for v in self.scale)
        image.min_ratio, image.max_ratio = (float(v) for v in self.ratio)
        image.random_flip = bool(self.flip)
        spec.image = image


class Ragged(NamedTuple):
    """A batch of variable-length byte strings.

    Sample ``i`` is ``values[offsets[i]:offsets[i + 1]]``; ``values`` is
    ``uint8 (N,)`` and ``offsets`` ``int64 (B + 1,)`` (tensors or arrays)."""

    values: object
    offsets: object

    def tolist(self) -> list[bytes]:
        """The samples as a list of ``bytes``."""
        values = memoryview(_as_numpy(self.values)).cast("B")
        offsets = _as_numpy(self.offsets).tolist()
        return [bytes(values[offsets[i]:offsets[i + 1]])
                for i in range(len(offsets) - 1)]


def _as_numpy(array):
    return array.numpy() if hasattr(array, "numpy") else array
