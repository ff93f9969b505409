"""How the assistant tunes the server process it runs in: its garbage collector and files.

A turn allocates thousands of short-lived containers (messages, state dicts, the store's
items), and LangGraph Server keeps threads, runs and the recall index alive in the same
process. With Python's default thresholds the collector then runs its young generation
every 700 new objects and, as the heap grows, walks every live object again and again: in
`bench/load.py`'s in-process twin, collection took about a third of a warm turn's CPU.

:func:`tune_server_process` runs once, last in the server's start-up hook
(`assistant.server.startup.start_server`), when the server has loaded the graph:

* ``gc.freeze()`` moves everything alive then (the imported modules, the model copies)
  out of the collector's reach, so no later collection walks it again;
* the first threshold becomes ``ASSISTANT_GC_THRESHOLD`` (default 10,000), so young
  collections run about 14 times less often. Cycles are still collected; only later.

``ASSISTANT_GC_THRESHOLD=off`` leaves the collector as Python set it.

:func:`keep_server_files_private` runs just before it: the files the server writes
from then on are its user's alone (0600, folders 0700). `langgraph dev` pickles threads,
runs with their messages, checkpoints and the store under ``.langgraph_api/``, which the
usual umask leaves readable by every local user.

Outside the server (tests, scripts, benchmarks in one process) nothing is changed.
"""

from __future__ import annotations

import gc
import logging
import os
from pathlib import Path

from assistant.config.constants import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE
from assistant.config.settings import get_process_settings, running_on_server

__all__ = ["DEV_RUNTIME_DIR", "keep_server_files_private", "tune_server_process"]

DEV_RUNTIME_DIR = Path(".langgraph_api")
"""Where `langgraph dev` pickles threads, runs, checkpoints and the store (working directory)."""

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


_private = False


def keep_server_files_private() -> bool:
    """Make the files the server process creates private, once; False when nothing changed.

    The process's umask becomes 077, so every file it creates from now on is 0600 and every
    folder 0700: the dev runtime's pickles are written anew (a temporary file, renamed) at
    each save, so the next save is private too. ``.langgraph_api/`` and the files already in
    it are made private now. The embedded Postgres keeps its own 0700 data folder.
    """
    global _private
    if _private or not running_on_server():
        return False
    _private = True
    os.umask(0o777 & ~PRIVATE_DIR_MODE)
    if DEV_RUNTIME_DIR.is_dir():
        DEV_RUNTIME_DIR.chmod(PRIVATE_DIR_MODE)
        for path in DEV_RUNTIME_DIR.iterdir():
            if path.is_file() and not path.is_symlink():
                path.chmod(PRIVATE_FILE_MODE)
    logger.info("Files the server creates are private (umask 077; %s/ is 0700)", DEV_RUNTIME_DIR)
    return True
