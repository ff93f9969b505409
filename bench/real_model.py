"""The real chat model a benchmark runs against: the environment's endpoint, else the local one.

``OPENAI_BASE_URL`` or ``OPENAI_API_KEY`` set: the assistant's own settings pick the model
(``ASSISTANT_MODEL``, ``ASSISTANT_MODEL_TIMEOUT_S``), as under ``make dev``; that is how
several benchmarks share one ``python examples/local_model.py serve``. Neither set:
``examples/local_model.py`` serves Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) on llama.cpp's
``llama-server`` for the duration, fetching and building it on first use.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from unittest import mock

import _examples  # noqa: F401 (puts examples/ on the path)
import local_model


@dataclass(frozen=True)
class Endpoint:
    """Where the model answers, and how the output names it."""

    model: str
    base_url: str
    described: str
    """One line for the output: which model produced the figures."""


def described(model: str, base_url: str, *, local: bool) -> str:
    """The output's line about the model.

    >>> described("m", "http://127.0.0.1:9/v1", local=True)
    'model: m (Q4_K_M GGUF on llama.cpp llama-server, local CPU, examples/local_model.py)'
    >>> described("gpt-4o-mini", "", local=False)
    'model: gpt-4o-mini at the OpenAI API'
    """
    if local:
        return f"model: {model} (Q4_K_M GGUF on llama.cpp llama-server, local CPU, " + (
            "examples/local_model.py)"
        )
    return f"model: {model} at {base_url or 'the OpenAI API'}"


@contextlib.contextmanager
def serving() -> Iterator[Endpoint]:
    """The endpoint the environment names, or the local model while the block runs (the
    assistant's settings pointed at it)."""
    if os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY"):
        model = os.environ.get("ASSISTANT_MODEL", "") or "gpt-4o-mini"
        base_url = os.environ.get("OPENAI_BASE_URL", "")
        # ``local_model.py serve`` shared by several runs is still the local model
        local = model == local_model.MODEL_NAME and base_url.startswith("http://127.0.0.1:")
        yield Endpoint(model, base_url, described(model, base_url, local=local))
        return
    served = local_model.start()
    try:
        with mock.patch.dict(os.environ, served.env()):
            yield Endpoint(
                local_model.MODEL_NAME,
                served.base_url,
                described(local_model.MODEL_NAME, served.base_url, local=True),
            )
    finally:
        served.stop()


def load_average() -> str:
    """The machine's load average (1, 5, 15 minutes), which the timings depend on."""
    try:
        with open("/proc/loadavg", encoding="utf-8") as file:
            return " ".join(file.read().split()[:3])
    except OSError:
        return "unknown"
