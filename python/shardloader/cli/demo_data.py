"""The demo's datasets: real image files in the ImageFolder layout.

``shardloader demo`` works on a directory with one folder per class
(``<root>/<class>/<file>.{jpg,jpeg,png}``, torchvision's ImageFolder
layout). By default that directory holds scikit-learn's bundled handwritten
digits (UCI "Optical Recognition of Handwritten Digits", 1797 8x8 images),
written here as one PNG per image; ``--data DIR`` names any other.

This module lists such a directory, splits it into train and test files by a
fixed rule, and stages each split for :func:`shardloader.cli.pack.pack`.
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
    """One labelled image file: its path, class index and size in bytes."""
    path: str
    label: int
    size_bytes: int


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


def scan_image_folder(root: str) -> ImageFolder:
    """Lists the images of an ImageFolder directory.

    Classes are the visible subfolders of ``root`` in sorted order (files
    directly under ``root``, such as a ``classes.tsv``, are ignored, as by
    torchvision's ImageFolder). Each class's images are the files of its
    folder tree with an extension in :data:`IMAGE_EXTENSIONS` (any case).

    Raises NotADirectoryError if ``root`` is not a directory and ValueError if
    it has no class folders or no images."""
    if not os.path.isdir(root):
        raise NotADirectoryError(f"not a directory: {root}")
    classes = sorted(name for name in os.listdir(root) if not name.startswith(".")
                     and os.path.isdir(os.path.join(root, name)))
    if not classes:
        raise ValueError(f"{root} has no class folders: expected the ImageFolder "
                         "layout <root>/<class>/<image>.jpg")
    files = []
    for label, name in enumerate(classes):
        for path in _image_paths(os.path.join(root, name)):
            files.append(ImageFile(path, label, os.path.getsize(path)))
    if not files:
        raise ValueError(f"{root} has no {'/'.join(IMAGE_EXTENSIONS)} images "
                         "in its class folders")
    return ImageFolder(root, classes, files)


def _image_paths(folder: str) -> list[str]:
    paths = []
    for parent, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        paths += [os.path.join(parent, n) for n in names if not n.startswith(".")
                  and n.rpartition(".")[2].lower() in IMAGE_EXTENSIONS]
    return sorted(paths)


def split(files: list[ImageFile]) -> tuple[list[ImageFile], list[ImageFile]]:
    """Splits files into (train, test): within each class, the file at
    position ``i`` (in name order) is held out when ``i % TEST_EVERY ==
    TEST_EVERY - 1``. Classes with fewer than ``TEST_EVERY`` files are all
    train, so the test list is empty when every class is that small."""
    train, test, position = [], [], {}
    for f in files:
        i = position[f.label] = position.get(f.label, -1) + 1
        (test if i % TEST_EVERY == TEST_EVERY - 1 else train).append(f)
    return train, test


def stage(files: list[ImageFile], classes: list[str], dest: str) -> str:
    """Lays ``files`` out for ``pack`` as ``<dest>/<class>/<n>.<ext>``
    symbolic links (copies where links are not supported), replacing
    ``dest``.

    ``pack`` labels samples by folder only when every entry of its source is
    a folder, and it groups files into samples by the name up to the first
    dot; fresh numbered names keep both exact whatever the original names.
    Returns ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    for name in classes:
        os.makedirs(os.path.join(dest, name))
    for n, f in enumerate(files):
        ext = f.path.rpartition(".")[2].lower()
        link = os.path.join(dest, classes[f.label], f"{n:07d}.{ext}")
        try:
            os.symlink(os.path.abspath(f.path), link)
        except OSError:
            shutil.copyfile(f.path, link)
    return dest
