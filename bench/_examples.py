"""Put ``examples/`` (the fake chat model, the scripted rules, the dev-server helper) on the
benchmarks' import path.

The benchmarks run as scripts (``python bench/load.py``); importing this module first lets
them ``from devserver import DevServer``, ``from function_model import FunctionChatModel``
and ``from scripted import ScriptedRules``.
"""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
