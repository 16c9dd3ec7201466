"""PyTorch integration: a Loader as a ``torch.utils.data.IterableDataset``.

Use it when a training script expects a DataLoader::

    ds = shardloader.torch.ShardDataset(
        "train-{000000..000127}.tar",
        fields={"image": sl.Image("jpg", size=224), "label": sl.Int("cls")},
        batch_size=256, shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4)

The dataset yields whole batches (``batch_size=None`` tells the DataLoader
not to batch again). With ``num_workers > 0`` each worker process builds its
own Loader and yields every K-th of this rank's batches (worker k of K
starts at k), so the DataLoader's round-robin gives the same batches, in the
same order, as a single Loader; each decodes with ``cpus // num_workers``
threads. A plain ``Loader`` in the main process is usually faster: it
decodes with threads outside the GIL already, and it is the one with
``state_dict()`` / ``load_state_dict()`` for exact resume.
"""

from __future__ import annotations

import os
from typing import Iterator, Mapping

import torch.utils.data

from .fields import Field
from .loader import Loader

__all__ = ["ShardDataset"]


class ShardDataset(torch.utils.data.IterableDataset):
    """An IterableDataset of shardloader batches.

    Args:
        urls, fields: as for :class:`shardloader.Loader`.
        **loader_options: any other :class:`shardloader.Loader` argument
            (``batch_size``, ``shuffle``, ``seed``, ``rank``, ...), except
            ``worker`` and ``num_workers``, which come from the DataLoader.

    Each item is one batch: ``dict[str, torch.Tensor]`` as the Loader gives.
    Call :meth:`set_epoch` before each epoch (with ``persistent_workers`` the
    workers keep the epoch they started with).
    """

    def __init__(self, urls, fields: Mapping[str, Field], **loader_options):
        super().__init__()
        for reserved in ("worker", "num_workers"):
            if reserved in loader_options:
                raise TypeError(f"{reserved} is set by the DataLoader")
        self._urls = urls
        self._fields = dict(fields)
        self._options = dict(loader_options)
        self._epoch = int(self._options.pop("epoch", 0))

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch of the next iteration."""
        self._epoch = epoch

    def _loader(self, worker: int, num_workers: int) -> Loader:
        options = dict(self._options)
        if num_workers > 1 and not options.get("num_threads"):
            cpus = len(os.sched_getaffinity(0))
            options["num_threads"] = max(1, cpus // num_workers)
        return Loader(self._urls, self._fields, worker=worker,
                      num_workers=num_workers, epoch=self._epoch,
                      output="torch", **options)

    def __iter__(self) -> Iterator[dict]:
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        with self._loader(worker, num_workers) as loader:
            yield from loader

    def __len__(self) -> int:
        """Batches of one epoch in the main process (without workers, each
        worker's last batch may be smaller, so the DataLoader may yield a
        few more)."""
        with self._loader(0, 1) as loader:
            return len(loader)
