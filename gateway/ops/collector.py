"""CPython's garbage collector, set for a process that serves the gateway
(`parsegate serve`, and each of its workers) once the app starts.

The collector finds reference cycles by walking every container object of
a generation (https://docs.python.org/3/library/gc.html). Two of its habits
cost a streaming gateway:
- A full collection walks the whole heap. After start-up that is some
  80,000 objects (modules, classes, functions, the config, the parsers'
  tables), none of them ever garbage. Under paced load a full collection
  came about every 200 requests and held every stream for 115–143 ms.
  `gc.freeze()` moves everything alive at start-up out of the collector's
  sight for good (the "permanent generation"), so that a full collection
  walks only what came after.
- A young collection runs every 700 allocations, and each moves what is
  alive then (the parsed request bodies, the state of the streams in
  flight) a generation older, to be walked again there. Every
  `YOUNG_THRESHOLD` allocations instead, the young collections walk less
  in all, and a collection of the middle generation is rare.

Measured (bench/README.md, "The garbage collector's pauses"): 200 paced
Responses streams, 48 at a time, spent 184–225 ms of CPU in the collector,
and its longest pause was 115–143 ms; after `settle`, 31–44 ms, and
4.8–6.4 ms. The gateway's CPU per chunk did not move beyond the noise: what
this buys is the pause. What start-up made and later becomes garbage (an
old config, after a reload) is freed as ever when its last reference goes;
only the cycles among it stay.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 5_000  # allocations between young collections (CPython's default: 700)


def settle() -> None:
    """Collect once, freeze what is left, and collect young objects every
    `YOUNG_THRESHOLD` allocations (the older generations' thresholds stay)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
