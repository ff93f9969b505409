"""Put ``examples/`` (the scripted model, the dev-server helper) on the benchmarks' import path.

The benchmarks run as scripts (``python bench/load.py``); importing this module first lets
them ``from devserver import DevServer`` and ``from scripted import ScriptedChatModel``.
"""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
