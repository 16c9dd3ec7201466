"""SourceOptions: how shards are opened and read, with keyword arguments.

The options themselves live in the C++ struct (cpp/shardloader/io/
source_options.h); this subclass only adds keyword construction with a clear
error for a misspelled name. ``help(sl.SourceOptions)`` lists every option
with its unit and default.
"""

import difflib

from . import _core

_OPTIONS = sorted(name for name, value in vars(_core.SourceOptions).items()
                  if isinstance(value, property))


class SourceOptions(_core.SourceOptions):
    """How shards are opened and read: local files, http(s)://, s3://, the cache.

    Every option is a keyword argument, e.g.
    ``sl.SourceOptions(cache_dir="/scratch/cache", endpoint_url="http://127.0.0.1:9000")``,
    and an attribute that may be set afterwards. Sizes are bytes, durations
    seconds (``*_s``). Credentials are never options: they come from the
    environment or the shared AWS files, so ``repr`` never shows a secret.

    Raises:
        TypeError: an unknown option (naming the closest known one).
    """

    def __init__(self, **options):
        super().__init__()
        for name, value in options.items():
            if name not in _OPTIONS:
                close = difflib.get_close_matches(name, _OPTIONS, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise TypeError(f"SourceOptions has no option '{name}'{hint} "
                                f"(options: {', '.join(_OPTIONS)})")
            setattr(self, name, value)
