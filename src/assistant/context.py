"""Run-time settings for the assistant graph.

Every field here shows up in LangGraph Studio's "Manage Assistants" panel and can
be set per run with ``client.runs.create(..., context={...})``.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant import prompts


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

    max_context_tokens: int = 3000
    """Token budget for the thread's messages. When they grow past it, `compress`
    folds the oldest ones into the running summary. The prompt sent to the model
    never carries more than this many tokens of messages."""

    keep_recent_tokens: int = 1200
    """How many tokens of the most recent messages `compress` keeps verbatim.
    Must be smaller than `max_context_tokens`."""

    summary_max_tokens: int = 600
    """Upper bound on the running summary that rides in the system prompt."""

    recall_limit: int = 5
    """How many of the user's facts `recall` puts into the system prompt, besides the
    profile."""

    profile_tokens: int = 200
    """Token budget of the `<user_profile>` block: the pinned facts (name, home,
    standing preferences, hard constraints) that go into every prompt."""

    episode_limit: int = 2
    """How many past conversations (episodes of other threads) `recall` adds."""

    episode_tokens: int = 300
    """Token budget of the `<past_conversations>` block."""

    min_fact_confidence: float = 0.6
    """Facts the extractor is less sure of than this (0-1) are not stored."""

    extraction_timeout_s: float = 30.0
    """Seconds `remember` waits for fact extraction before it gives up for this turn.
    The reply is never held back by it."""

    def __post_init__(self) -> None:
        """Reject settings that cannot work together."""
        for name in ("max_context_tokens", "keep_recent_tokens", "summary_max_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Context.{name} must be a positive integer, got {value!r}")
        for name in ("profile_tokens", "episode_limit", "episode_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"Context.{name} must be a non-negative integer, got {value!r}")
        if self.keep_recent_tokens >= self.max_context_tokens:
            raise ValueError(
                "Context.keep_recent_tokens must be smaller than max_context_tokens, got "
                f"keep_recent_tokens={self.keep_recent_tokens} "
                f"max_context_tokens={self.max_context_tokens}"
            )
        if not isinstance(self.recall_limit, int) or not 0 <= self.recall_limit <= 50:
            raise ValueError(
                f"Context.recall_limit must be between 0 and 50, got {self.recall_limit!r}"
            )
        if not 0.0 <= self.min_fact_confidence <= 1.0:
            raise ValueError(
                "Context.min_fact_confidence must be between 0 and 1, "
                f"got {self.min_fact_confidence!r}"
            )
