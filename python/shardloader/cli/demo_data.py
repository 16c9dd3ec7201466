"""The demo's datasets: real image files in the ImageFolder layout.

``shardloader demo`` works on a directory with one folder per class
(``<root>/<class>/<file>.{jpg,jpeg,png}``, torchvision's ImageFolder
layout). By default that directory holds scikit-learn's bundled handwritten
digits (UCI "Optical Recognition of Handwritten Digits", 1797 8x8 images),
written here as one PNG per image; ``--data DIR`` names any other.

This module lists such a directory, splits it into train and test files by a
fixed rule, and stages each split for :func:`shardloader.cli.pack.pack` in a
shuffled order (an ImageFolder lists files class by class; shards written in
that order would hold one class each, which a shuffle buffer of a few shards
cannot mix: shuffle when writing, as WebDataset advises).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

import numpy as np

#: Extensions (lower case, no dot) the demo reads: what ``sl.Image`` decodes.
IMAGE_EXTENSIONS = ("jpg", "jpeg", "png")

#: In each class, files at sorted positions 4, 9, 14, ... are held out: 20%.
TEST_EVERY = 5


@dataclass(frozen=True)
class ImageFile:
    """One labelled image file: its path, class index, position among its
    class's files (0, 1, ...), size in bytes, and its sample key in the
    demo's shards (files numbered in a seeded random order)."""
    path: str
    label: int
    number: int
    size_bytes: int
    key: str


@dataclass(frozen=True)
class ImageFolder:
    """An ImageFolder directory: class names (sorted folder names; class
    ``i`` is ``classes[i]``) and the image files, by class then name."""
    root: str
    classes: list[str]
    files: list[ImageFile]

    @property
    def num_bytes(self) -> int:
        """Total size of the image files in bytes."""
        return sum(f.size_bytes for f in self.files)


def write_digits(root: str) -> str:
    """Writes scikit-learn's digits as ``<root>/<digit>/<index>.png``.

    Each image is 8x8 8-bit grayscale: the dataset's 0..16 intensities scaled
    to 0..255. Files are named by the image's index in ``load_digits()``,
    zero-padded (``0/0000.png``). The data ships inside the scikit-learn
    wheel: nothing is downloaded. Returns ``root``.

    Raises ImportError if scikit-learn or Pillow is missing."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.rint(digits.images * (255.0 / 16.0)).astype(np.uint8)  # (1797, 8, 8)
    for label in np.unique(digits.target):
        os.makedirs(os.path.join(root, str(label)), exist_ok=True)
    for index, (pixels, label) in enumerate(zip(images, digits.target)):
        Image.fromarray(pixels, mode="L").save(
            os.path.join(root, str(label), f"{index:04d}.png"))
    return root


def scan_image_folder(root: str, seed: int = 0) -> ImageFolder:
    """Lists the images of an ImageFolder directory.

    Classes are the visible subfolders of ``root`` in sorted order (files
    directly under ``root``, such as a ``classes.tsv``, are ignored, as by
    torchvision's ImageFolder). Each class's images are the files of its
    folder tree with an extension in :data:`IMAGE_EXTENSIONS` (any case).
    Keys are zero-padded numbers in an order drawn from ``seed``.

    Raises NotADirectoryError if ``root`` is not a directory and ValueError if
    it has no class folders or no images."""
    if not os.path.isdir(root):
        raise NotADirectoryError(f"not a directory: {root}")
    classes = sorted(name for name in os.listdir(root) if not name.startswith(".")
                     and os.path.isdir(os.path.join(root, name)))
    if not classes:
        raise ValueError(f"{root} has no class folders: expected the ImageFolder "
                         "layout <root>/<class>/<image>.jpg")
    found = [(path, label, number) for label, name in enumerate(classes)
             for number, path in enumerate(_image_paths(os.path.join(root, name)))]
    if not found:
        raise ValueError(f"{root} has no {'/'.join(IMAGE_EXTENSIONS)} images "
                         "in its class folders")
    order = np.random.default_rng(seed).permutation(len(found))
    width = len(str(len(found) - 1))
    files = [ImageFile(path, label, number, os.path.getsize(path),
                       key=f"{order[i]:0{width}d}")
             for i, (path, label, number) in enumerate(found)]
    return ImageFolder(root, classes, files)


def _image_paths(folder: str) -> list[str]:
    paths = []
    for parent, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        paths += [os.path.join(parent, n) for n in names if not n.startswith(".")
                  and n.rpartition(".")[2].lower() in IMAGE_EXTENSIONS]
    return sorted(paths)


def split(files: list[ImageFile]) -> tuple[list[ImageFile], list[ImageFile]]:
    """Splits files into (train, test): a file is held out when its
    ``number`` in its class is ``TEST_EVERY - 1`` modulo ``TEST_EVERY``.
    Classes with fewer than ``TEST_EVERY`` files are all train, so the test
    list is empty when every class is that small."""
    train, test = [], []
    for f in files:
        (test if f.number % TEST_EVERY == TEST_EVERY - 1 else train).append(f)
    return train, test


def stage(files: list[ImageFile], dest: str) -> str:
    """Lays ``files`` out for ``pack`` in one flat folder, replacing
    ``dest``: per file, ``<key>.<ext>``, a symbolic link to it (a copy where
    links are not supported), and ``<key>.cls``, its label as decimal text.

    ``pack`` makes each ``<key>.*`` pair one sample (``.cls`` being the
    WebDataset label convention) and writes samples in key order, which is
    the files' shuffled order. Short fresh keys also keep samples exact
    whatever the original names (``pack`` groups files by the name up to the
    first dot). Returns ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    for f in files:
        ext = f.path.rpartition(".")[2].lower()
        link = os.path.join(dest, f"{f.key}.{ext}")
        try:
            os.symlink(os.path.abspath(f.path), link)
        except OSError:
            shutil.copyfile(f.path, link)
        with open(os.path.join(dest, f"{f.key}.cls"), "w") as label_file:
            label_file.write(str(f.label))
    return dest
