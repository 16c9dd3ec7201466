"""shardloader: stream training data from tar shards at full speed.

A C++ engine reads WebDataset-style tar shards with its own I/O threads,
shuffles samples, decodes them in a thread pool outside the GIL and hands
batches to Python without copying. See README.md.
"""

from .errors import *  # noqa: F401,F403
from .errors import __all__ as _error_names
from .fields import Bytes, Field, Image, Int, Npy, Ragged, Text
from .loader import Loader
from .writer import ShardWriter
from .source import SourceOptions

__version__ = "0.1.0"

__all__ = ["Loader", "ShardWriter", "SourceOptions", "Field", "Bytes", "Text", "Int", "Npy",
           "Image", "Ragged", *_error_names]
