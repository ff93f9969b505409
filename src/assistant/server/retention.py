"""Retention: summarise idle threads into episodes, delete old threads, facts and audit entries.

Checkpoints grow with every turn and LangGraph keeps them until told otherwise. Run

    python -m assistant.server.retention --idle-days 90 --superseded-days 365

against a server (``--url``, default ``ASSISTANT_URL`` or http://127.0.0.1:2025) with the
maintenance token (``--token``, default ``ASSISTANT_TOKEN``; the server must have the same
value in ``ASSISTANT_ADMIN_TOKEN``), or with no token against a server without auth.
``--dry-run`` lists what would go. Current facts and episodes are never touched: a fact
only becomes prunable once it was superseded more than ``--superseded-days`` ago. Audit
entries older than ``--audit-days`` (default ``ASSISTANT_AUDIT_DAYS``, a year) are deleted
too, since a correction's entry keeps both wordings.

``--episodes-after-hours H`` first saves an episode for every thread idle for H hours that
has none yet (a thread that never grew long enough to be compressed), by summarising its
messages with the configured chat model, so "what did we decide last week?" works for
short conversations too, and before an idle thread is deleted. Threads need an owner
(``metadata.owner``, stamped by the server's auth) to know whose episode it is. The episode
goes through the store API, which hands it to the memory layer (`assistant.server.store_api`), so
the servers' recall indexes learn of it as of any other write.

Deployments can also let the platform expire checkpoints: langgraph.json sets
``checkpointer.ttl`` (and ``store.ttl`` with refresh-on-read, no default expiry, so facts
live until pruned). ``langgraph dev`` accepts but ignores both.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import HumanMessage, convert_to_messages
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from assistant.config.settings import get_client_settings, get_retention_settings
from assistant.inference import models
from assistant.memory import (
    AUDIT_NAMESPACE,
    FACTS_NAMESPACE,
    InvalidUserIdError,
    episode_record,
    user_episodes_namespace,
)
from assistant.run.history import truncate_text
from assistant.run.prompting import summary_prompt

__all__ = ["RetentionReport", "main", "prune", "save_idle_episodes"]

PAGE = 100

EPISODE_TOKENS = 600
"""Upper bound on an idle thread's episode (Context.summary_max_tokens' default)."""


@dataclass
class RetentionReport:
    """What :func:`prune` deleted (or would delete, in a dry run)."""

    threads: list[str] = field(default_factory=list)
    """Ids of threads idle for longer than the limit."""
    facts: list[tuple[str, str]] = field(default_factory=list)
    """``(user_id, key)`` of superseded facts older than the limit."""
    audit: list[tuple[str, str]] = field(default_factory=list)
    """``(user_id, key)`` of audit entries older than the limit."""


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


async def _idle(client: LangGraphClient, cutoff: datetime) -> list[dict[str, Any]]:
    idle: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = await client.threads.search(limit=PAGE, offset=offset)
        for thread in page:
            updated = _parse_time(thread.get("updated_at"))
            if updated is not None and updated < cutoff and thread.get("status") != "busy":
                idle.append(dict(thread))
        if len(page) < PAGE:
            return idle
        offset += PAGE


async def _idle_threads(client: LangGraphClient, cutoff: datetime) -> list[str]:
    return [str(thread["thread_id"]) for thread in await _idle(client, cutoff)]


async def save_idle_episodes(
    client: LangGraphClient, *, idle_hours: float, now: datetime | None = None
) -> list[str]:
    """Summarise threads idle for ``idle_hours`` that have no episode yet; return their ids.

    A thread whose episode is at least as new as its last change is skipped, so running
    this on a schedule summarises each conversation once.
    """
    now = now or datetime.now(UTC)
    saved: list[str] = []
    for thread in await _idle(client, now - timedelta(hours=idle_hours)):
        namespace = _episode_namespace(thread)
        if namespace is None or not await _needs_episode(client, namespace, thread):
            continue
        episode = await _summarise(thread, now)
        if episode is None:
            continue
        await client.store.put_item(namespace, str(thread["thread_id"]), episode)
        saved.append(str(thread["thread_id"]))
    return saved


def _episode_namespace(thread: dict[str, Any]) -> list[str] | None:
    """Where the episode of ``thread`` goes; None for a thread with too little to summarise.

    That is a thread with no owner of this assistant (e.g. the maintenance identity's) or
    fewer than two messages.
    """
    owner = (thread.get("metadata") or {}).get("owner")
    if not owner or len((thread.get("values") or {}).get("messages") or []) < 2:
        return None
    try:
        return list(user_episodes_namespace(str(owner)))
    except InvalidUserIdError:
        return None


async def _needs_episode(
    client: LangGraphClient, namespace: list[str], thread: dict[str, Any]
) -> bool:
    """Whether ``thread`` changed since its episode ended (or has none)."""
    existing = await client.store.get_item(namespace, str(thread["thread_id"]))
    if existing is None:
        return True
    ended = _parse_time(existing["value"].get("ended_at"))
    updated = _parse_time(thread.get("updated_at"))
    return ended is None or updated is None or ended < updated


async def _summarise(thread: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    """The episode of ``thread``, summarised by the configured chat model; None if empty."""
    values = thread.get("values") or {}
    prompt = summary_prompt(
        max_tokens=EPISODE_TOKENS,
        remembered=[],
        summary=str(values.get("summary") or ""),
        messages=convert_to_messages(values.get("messages") or []),
    )
    response = await models.get_chat_model().ainvoke([HumanMessage(content=prompt)])
    summary = truncate_text(response.text.strip(), EPISODE_TOKENS)
    if not summary:
        return None
    updated = _parse_time(thread.get("updated_at"))
    return episode_record(
        summary=summary,
        thread_id=str(thread["thread_id"]),
        started_at=values.get("started_at") or str(thread.get("created_at")),
        ended_at=updated.isoformat() if updated else now.isoformat(),
        updated_at=now.isoformat(),
    )


async def _user_namespaces(client: LangGraphClient, label: str) -> list[list[str]]:
    """Every ``(label, user)`` namespace in the store, a page at a time."""
    found: list[list[str]] = []
    offset = 0
    while True:
        page = await client.store.list_namespaces(
            prefix=[label], max_depth=2, limit=PAGE, offset=offset
        )
        found += [list(namespace) for namespace in page["namespaces"] if len(namespace) == 2]
        if len(page["namespaces"]) < PAGE:
            return found
        offset += PAGE


async def _older(
    client: LangGraphClient,
    label: str,
    field_name: str,
    cutoff: datetime,
    *,
    status: str | None = None,
) -> list[tuple[str, str]]:
    """``(user, key)`` of each item of each user's ``label`` namespace older than ``cutoff``.

    An item's age is its ``field_name``; with ``status``, only items of that status count.
    """
    old: list[tuple[str, str]] = []
    for namespace in await _user_namespaces(client, label):
        offset = 0
        while True:
            found = await client.store.search_items(
                namespace,
                filter={"status": status} if status else None,
                limit=PAGE,
                offset=offset,
            )
            for item in found["items"]:
                when = _parse_time(item["value"].get(field_name))
                if when is not None and when < cutoff:
                    old.append((namespace[1], item["key"]))
            if len(found["items"]) < PAGE:
                break
            offset += PAGE
    return old


async def prune(
    client: LangGraphClient,
    *,
    idle_days: float,
    superseded_days: float,
    audit_days: float | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> RetentionReport:
    """Delete idle threads, long-superseded facts and old audit entries.

    Threads idle for ``idle_days``, facts superseded ``superseded_days`` ago, and audit
    entries older than ``audit_days`` (default: ``ASSISTANT_AUDIT_DAYS``). A superseded
    fact is deleted through the store API, which forgets it in the memory layer: its
    earlier versions and its words in the audit trail go with it, and the user's trail
    records the deletion by the maintenance identity.
    """
    if audit_days is None:
        audit_days = get_retention_settings().audit_days
    if idle_days <= 0 or superseded_days <= 0 or audit_days <= 0:
        raise ValueError(
            f"Limits must be positive, got idle_days={idle_days} "
            f"superseded_days={superseded_days} audit_days={audit_days}"
        )
    now = now or datetime.now(UTC)
    report = RetentionReport(
        threads=await _idle_threads(client, now - timedelta(days=idle_days)),
        facts=await _older(
            client,
            FACTS_NAMESPACE,
            "valid_until",
            now - timedelta(days=superseded_days),
            status="superseded",
        ),
        audit=await _older(client, AUDIT_NAMESPACE, "at", now - timedelta(days=audit_days)),
    )
    if not dry_run:
        for thread_id in report.threads:
            await client.threads.delete(thread_id)
        for user_id, key in report.facts:
            await client.store.delete_item([FACTS_NAMESPACE, user_id], key)
        for user_id, key in report.audit:
            await client.store.delete_item([AUDIT_NAMESPACE, user_id], key)
    return report


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: ``python -m assistant.server.retention``."""
    url, token = get_client_settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", default=url, help="server URL (ASSISTANT_URL)")
    parser.add_argument("--token", default=token, help="maintenance token (ASSISTANT_TOKEN)")
    parser.add_argument("--idle-days", type=float, required=True)
    parser.add_argument("--superseded-days", type=float, required=True)
    parser.add_argument(
        "--audit-days",
        type=float,
        default=get_retention_settings().audit_days,
        help="delete audit entries older than this (ASSISTANT_AUDIT_DAYS, default 365)",
    )
    parser.add_argument("--dry-run", action="store_true", help="list, delete nothing")
    parser.add_argument(
        "--episodes-after-hours",
        type=float,
        help="first summarise threads idle this long into episodes (needs a chat model)",
    )
    args = parser.parse_args(argv)
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    client = get_client(url=args.url, api_key=None, headers=headers)

    async def run() -> RetentionReport:
        if args.episodes_after_hours and not args.dry_run:
            saved = await save_idle_episodes(client, idle_hours=args.episodes_after_hours)
            print(f"saved {len(saved)} episode(s) of idle threads")
        return await prune(
            client,
            idle_days=args.idle_days,
            superseded_days=args.superseded_days,
            audit_days=args.audit_days,
            dry_run=args.dry_run,
        )

    report = asyncio.run(run())
    verb = "would delete" if args.dry_run else "deleted"
    print(
        f"{verb} {len(report.threads)} idle thread(s), {len(report.facts)} old fact(s) and "
        f"{len(report.audit)} old audit entr{'y' if len(report.audit) == 1 else 'ies'}"
    )
    for thread_id in report.threads:
        print(f"  thread {thread_id}")
    for user_id, key in report.facts:
        print(f"  fact {user_id}/{key}")
    for user_id, key in report.audit:
        print(f"  audit {user_id}/{key}")


if __name__ == "__main__":
    main()
