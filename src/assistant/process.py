"""How the assistant tunes the server process it runs in: its garbage collector.

A turn allocates thousands of short-lived containers (messages, state dicts, the store's
items), and LangGraph Server keeps threads, runs and the recall index alive in the same
process. With Python's default thresholds the collector then runs its young generation
every 700 new objects and, as the heap grows, walks every live object again and again: in
`bench/load.py`'s in-process twin, collection took about a third of a warm turn's CPU.

:func:`tune_server_process` runs once, when the server has imported the graph:

* ``gc.freeze()`` moves everything alive then (the imported modules, the model copies)
  out of the collector's reach, so no later collection walks it again;
* the first threshold becomes ``ASSISTANT_GC_THRESHOLD`` (default 10,000), so young
  collections run about 14 times less often. Cycles are still collected; only later.

``ASSISTANT_GC_THRESHOLD=off`` leaves the collector as Python set it. Outside the server
(tests, scripts, benchmarks in one process) nothing is changed.
"""

from __future__ import annotations

import gc
import logging

from assistant.settings import get_process_settings, running_on_server

__all__ = ["tune_server_process"]

logger = logging.getLogger(__name__)

_tuned = False


def tune_server_process() -> bool:
    """Tune the garbage collector of the server process, once; False when nothing changed."""
    global _tuned
    threshold = get_process_settings().gc_threshold
    if _tuned or threshold is None or not running_on_server():
        return False
    _tuned = True
    _, older, oldest = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(threshold, older, oldest)
    logger.info(
        "Garbage collector: %d objects frozen, first threshold %d (ASSISTANT_GC_THRESHOLD)",
        gc.get_freeze_count(),
        threshold,
    )
    return True
