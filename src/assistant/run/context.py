"""Run-time settings for the assistant graph.

Every field here shows up in LangGraph Studio's "Manage Assistants" panel and can
be set per run with ``client.runs.create(..., context={...})``.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant.run import prompts


@dataclass(kw_only=True)
class Context:
    """Settings that shape one run of the assistant."""

    user_id: str = "default-user"
    """Whose memories to read and write when the server has no auth configured.

    When custom auth is on, the authenticated identity is used instead and this
    field is ignored. Must be 1-128 characters with no whitespace or `.`, and must
    not start with `langgraph`."""

    model: str = ""
    """Chat model name on the configured OpenAI-compatible endpoint, such as
    `gpt-4o-mini`, `deepseek-chat` or `qwen2.5:7b`. Empty means the
    `ASSISTANT_MODEL` environment variable (and `gpt-4o-mini` when talking to
    OpenAI itself)."""

    system_prompt: str = prompts.PERSONA
    """The persona at the top of every system prompt. The current time, the
    recalled facts and the running summary are appended to it."""

    max_context_tokens: int = 2400
    """Token budget of the thread's working memory: its messages, its running summary and
    the memory a prompt shows beside them (profile, recalled facts, past episodes)
    together. When they grow past it, `compress` folds the oldest messages into the
    summary. The prompt sent to the model never carries more than this many tokens of
    messages. With `keep_recent_tokens` and the summary's length it sets how often
    `compress` calls the model: once per (max_context_tokens - keep_recent_tokens -
    summary - memory shown) tokens of conversation."""

    max_prompt_tokens: int = 4000
    """Token budget of the whole prompt sent for a reply: persona, time, profile, facts,
    past episodes, summary and messages. Over it, the prompt gives up episodes, then facts,
    then summary text, then profile facts other than hard constraints, then old messages;
    never the hard constraints or the latest user message."""

    keep_recent_tokens: int = 200
    """How many tokens of the most recent messages `compress` keeps verbatim (at most what
    `max_context_tokens` leaves beside `summary_max_tokens` and the memory shown); the
    latest exchange always stays, even when it is longer. Small, so that each compression
    folds much and the prompt starts small again. Must be smaller than
    `max_context_tokens`."""

    summary_max_tokens: int = 300
    """Upper bound on the running summary that rides in the system prompt; it counts
    against `max_context_tokens`, so a longer summary leaves less room for messages. The
    profile and recalled facts are not repeated in it."""

    recall_limit: int = 5
    """How many of the user's facts `recall` puts into the system prompt, besides the
    profile."""

    whole_memory_tokens: int = 250
    """A memory this small (the user's facts besides the profile, in tokens, at most 12
    facts) goes into the prompt whole, so no fact (an allergy, say) loses its place to
    ranking on a question that does not name it. 0 always keeps to `recall_limit`."""

    profile_tokens: int = 200
    """Token budget of the `<user_profile>` block: the pinned facts (name, home,
    standing preferences, hard constraints) that go into every prompt."""

    episode_limit: int = 2
    """How many past conversations (episodes of other threads) `recall` adds."""

    episode_tokens: int = 300
    """Token budget of the `<past_conversations>` block."""

    min_fact_confidence: float = 0.6
    """Facts the extractor is less sure of than this (0-1) are not stored."""

    extraction_timeout_s: float = 0.0
    """Seconds `remember` waits for fact extraction before it gives up for this turn (a
    failed extraction is tried again later). 0 follows the model: twice
    `ASSISTANT_MODEL_TIMEOUT_S`, room for one structured-output fallback. The reply is
    never held back by it."""

    extraction_hold_s: float = 300.0
    """Seconds a message the gate is unsure about may wait to be extracted together with
    the thread's next messages (one call for several). 0 extracts it at once."""

    def __post_init__(self) -> None:
        """Check every field's type and range, naming the field and the value when wrong.

        >>> Context(extraction_timeout_s="abc")
        Traceback (most recent call last):
        ...
        ValueError: Context.extraction_timeout_s must be a number between 0 and 600, got 'abc'
        """
        for name, (low, high) in INTEGER_RANGES.items():
            _check_number(name, getattr(self, name), low, high, integer=True)
        for name, (real_low, real_high) in NUMBER_RANGES.items():
            _check_number(name, getattr(self, name), real_low, real_high, integer=False)
        if 0 < self.extraction_timeout_s < 1:
            raise ValueError(
                "Context.extraction_timeout_s must be 0 (follow the model's timeout) or at "
                f"least 1 second, got {_shown(self.extraction_timeout_s)}"
            )
        for name, limit in TEXT_LIMITS.items():
            value = getattr(self, name)
            if not isinstance(value, str) or len(value) > limit:
                raise ValueError(
                    f"Context.{name} must be a string of at most {limit} characters, "
                    f"got {_shown(value)}"
                )
        if self.keep_recent_tokens >= self.max_context_tokens:
            raise ValueError(
                "Context.keep_recent_tokens must be smaller than max_context_tokens, got "
                f"keep_recent_tokens={self.keep_recent_tokens} "
                f"max_context_tokens={self.max_context_tokens}"
            )


INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "max_context_tokens": (1, 1_000_000),
    "max_prompt_tokens": (100, 2_000_000),
    "keep_recent_tokens": (1, 1_000_000),
    "summary_max_tokens": (1, 100_000),
    "recall_limit": (0, 50),
    "whole_memory_tokens": (0, 100_000),
    "profile_tokens": (0, 100_000),
    "episode_limit": (0, 20),
    "episode_tokens": (0, 100_000),
}
"""The range each integer field must lie in, whoever sets it."""

NUMBER_RANGES: dict[str, tuple[float, float]] = {
    "min_fact_confidence": (0.0, 1.0),
    "extraction_timeout_s": (0.0, 600.0),
    "extraction_hold_s": (0.0, 600.0),
}
"""The range each real-valued field must lie in (an integer is accepted too)."""

TEXT_LIMITS: dict[str, int] = {"user_id": 1_000, "model": 200, "system_prompt": 20_000}
"""The longest value each text field accepts (user ids are checked further where used)."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _check_number(name: str, value: object, low: float, high: float, *, integer: bool) -> None:
    kinds = (int,) if integer else (int, float)
    valid = isinstance(value, kinds) and not isinstance(value, bool)
    if not valid or not low <= value <= high:  # type: ignore[operator]
        kind = "an integer" if integer else "a number"
        bounds = f"{low:,.0f} and {high:,.0f}" if integer else f"{low:g} and {high:g}"
        raise ValueError(f"Context.{name} must be {kind} between {bounds}, got {_shown(value)}")
