"""Forget means gone, and the store API writes facts the way the memory layer does.

A forgotten fact's words leave everything the memory layer keeps for the user (its earlier
versions, the audit trail, what memory heard, held messages, unsettled turns, episodes that
quote it, the recall index), while the audit keeps that it was forgotten. A fact put or
deleted through the HTTP store API goes through the same rules: limits, history, audit, and
a ``via`` the server knows rather than one the client claims.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph_sdk import Auth
from starlette.requests import Request

from assistant import memory
from assistant.config.constants import ADMIN_IDENTITY, ADMIN_PERMISSION, USER_PERMISSION
from assistant.memory.client_facts import plan_put
from assistant.memory.facts import update_memory
from assistant.memory.heard import record_heard
from assistant.memory.held import hold_message
from assistant.memory.namespaces import index_revision_location
from assistant.memory.search.matching import MATCH_FLOOR
from assistant.memory.search.user_index import registry
from assistant.memory.writer import Writer
from assistant.run.context import Context
from assistant.run.scope import RunScope
from assistant.server import auth, retention, webapp
from helpers import changes, current_facts

USER = "alice"

FORGOTTEN_WORDS = ("hangzhou", "chengdu", "杭州")
"""Words of the facts forgotten below, in any case."""


async def everything_kept_for(store: BaseStore, user_id: str) -> dict[str, list[Any]]:
    """Every value of every namespace that names ``user_id``, by namespace."""
    kept: dict[str, list[Any]] = {}
    for namespace in await store.alist_namespaces(limit=1000):
        if user_id in namespace:
            items = await store.asearch(namespace, limit=1000)
            kept["/".join(namespace)] = [item.value for item in items]
    return kept


def words_left(kept: dict[str, list[Any]]) -> list[str]:
    text = json.dumps(kept, ensure_ascii=False).casefold()
    return [word for word in FORGOTTEN_WORDS if word in text]


async def seed_a_moved_user(store: BaseStore) -> tuple[str, str]:
    """Alice lived in Hangzhou, then corrected it to Chengdu; her memory quotes both."""
    hangzhou = await memory.save_memory(
        store, USER, "Lives in Hangzhou", category="location", pinned=True
    )
    chengdu = await memory.UserMemory(store, USER).correct(
        hangzhou, "Lives in Chengdu", actor=USER, via="chat", thread_id="t1"
    )
    await update_memory(
        Writer(store=store, user_id=USER), chengdu, "Lives in Chengdu, near the river"
    )
    await memory.save_memory(
        store,
        USER,
        "Likes green tea",
        category="preference",
        context="You said: lives in Chengdu, near the river. What do you like to drink?",
    )
    await record_heard(
        store,
        USER,
        thread_id="t1",
        message_id="m1",
        text="I live in Hangzhou",
        outcome="kept",
        reason="added 1",
        facts=[hangzhou],
    )
    await record_heard(
        store,
        USER,
        thread_id="t2",
        message_id="m2",
        text="As my sister says: lives in Chengdu, near the river!",
        outcome="nothing",
        reason="no durable fact found",
    )
    await record_heard(
        store, USER, thread_id="t2", message_id="m3", text="thanks!", outcome="skipped", reason=""
    )
    await hold_message(
        store, USER, thread_id="t3", message_id="m4", text="Again: lives in Chengdu, near the river"
    )
    await hold_message(
        store,
        USER,
        thread_id="t3",
        message_id="m5",
        text="I like oolong",
        context="Lives in Chengdu, near the river: anything else?",
    )
    chengdu_item = await memory.get_memory(store, USER, chengdu)
    assert chengdu_item is not None
    turn = Writer(store=store, user_id=USER, thread_id="t4", message_id="m6")
    turn.before[chengdu] = dict(chengdu_item.value)  # as if the turn had changed it
    await turn.record_turn()
    await memory.UserMemory(store, USER).save_episode(
        thread_id="t5",
        summary="The user said she lives in Chengdu, near the river, and planned a trip to Xi'an.",
    )
    return hangzhou, chengdu


async def test_forgetting_a_fact_takes_its_words_out_of_everything_memory_keeps(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assistant.inference.e5 import E5Embeddings

    # The bundled embedder's cache is the process's: earlier tests' texts must not count here.
    monkeypatch.setattr(E5Embeddings, "_cache", type(E5Embeddings._cache)())
    hangzhou, chengdu = await seed_a_moved_user(store)
    assert words_left(await everything_kept_for(store, USER)) == ["hangzhou", "chengdu"]

    forgotten = await memory.UserMemory(store, USER).forget(
        chengdu, actor=USER, via=memory.API_VIA, client="cli"
    )

    assert forgotten is not None
    assert forgotten.content == "Lives in Chengdu, near the river"
    assert forgotten.erased == {
        "versions": 2,  # the fact and the Hangzhou it replaced
        "contexts": 1,  # the question the tea fact answered quoted it
        "audit": 4,  # the additions of Hangzhou and Chengdu, the correction, the rewording
        "heard": 2,  # the message that said Hangzhou, the one quoting Chengdu
        "held": 2,  # one said it (dropped), one's context quoted it
        "turns": 1,
        "episodes": 1,
        "cached": 0,  # the test embedder keeps no cache
    }
    kept = await everything_kept_for(store, USER)
    assert words_left(kept) == [], kept
    assert await current_facts(store, USER) == ["Likes green tea"]
    assert await memory.get_memory(store, USER, hangzhou) is None

    correct, update, forget = sorted(
        changes(await memory.list_audit(store, USER)), key=lambda e: e["at"]
    )
    assert (correct["action"], correct["content"], correct["new_content"]) == (
        "correct",
        memory.FORGOTTEN,
        memory.FORGOTTEN,
    )
    assert (update["action"], update["content"], update["new_content"]) == (
        "update",
        memory.FORGOTTEN,
        memory.FORGOTTEN,
    )
    added = [e for e in await memory.list_audit(store, USER) if e["action"] == "add"]
    assert sorted(e["content"] for e in added) == [
        "Likes green tea",
        memory.FORGOTTEN,
        memory.FORGOTTEN,
    ]
    assert correct["forgotten"] is True and correct["via"] == "chat"  # what happened stays
    assert forget == forgotten.entry
    assert {k: forget[k] for k in ("action", "fact_key", "content", "via", "client")} == {
        "action": "forget",
        "fact_key": chengdu,
        "content": memory.FORGOTTEN,
        "via": "api",
        "client": "cli",
    }
    heard = {turn["message_id"]: turn for turn in await memory.list_heard(store, USER)}
    assert heard["m1"]["excerpt"] == heard["m2"]["excerpt"] == ""
    assert heard["m2"]["outcome"] == "nothing" and heard["m2"]["forgotten"] is True
    assert heard["m3"]["excerpt"] == "thanks!"
    [held] = await memory.held_messages(store, USER)
    assert (held["text"], held["context"]) == ("I like oolong", "[forgotten]: anything else?")
    [tea] = [item.value for item in await memory.list_memories(store, USER)]
    assert tea["context"] == "You said: [forgotten]. What do you like to drink?"
    found = await memory.recall(store, USER, "Chengdu river", limit=5)
    assert "chengdu" not in json.dumps([item.value for item in found]).casefold()
    [episode] = await memory.list_episodes(store, USER)
    assert episode.value["content"] == (
        "The user said she [forgotten], and planned a trip to Xi'an."
    )


async def test_a_forgotten_fact_is_never_recalled_even_when_another_process_wrote_meanwhile(
    store: InMemoryStore,
) -> None:
    """The recall index drops it at once, even when its revision shows another writer."""
    key = await memory.save_memory(store, USER, "Lives in Chengdu", category="location")
    await memory.save_memory(store, USER, "Likes green tea")
    assert [item.key for item in await memory.recall(store, USER, "Chengdu", limit=1)] == [key]
    namespace = memory.user_facts_namespace(USER)
    revision_namespace, revision_key = index_revision_location(namespace)
    await store.aput(revision_namespace, revision_key, {"revision": "another process"})

    await memory.UserMemory(store, USER).forget(key, actor=USER, via="chat")

    index = registry(store).users[namespace]
    assert key not in index.items and key not in index.rows
    assert key not in index.lexical and index.lexical.search("Chengdu", limit=5) == []
    found = await memory.recall(store, USER, "Lives in Chengdu", limit=5)
    assert [item.value["content"] for item in found] == ["Likes green tea"]


async def test_forgetting_an_old_version_keeps_the_fact_that_replaced_it(
    store: InMemoryStore,
) -> None:
    hangzhou = await memory.save_memory(store, USER, "Lives in Hangzhou")
    chengdu = await memory.UserMemory(store, USER).correct(
        hangzhou, "Lives in Chengdu", actor=USER, via="chat"
    )

    forgotten = await memory.UserMemory(store, USER).forget(hangzhou, actor=USER, via="api")

    assert forgotten is not None and forgotten.erased["versions"] == 1
    assert await current_facts(store, USER) == ["Lives in Chengdu"]
    correct = next(
        e for e in changes(await memory.list_audit(store, USER)) if e["action"] == "correct"
    )
    assert (correct["content"], correct["new_content"]) == (memory.FORGOTTEN, "Lives in Chengdu")
    assert correct["new_fact_key"] == chengdu


async def test_a_rolled_back_turn_cannot_bring_a_forgotten_fact_back(store: InMemoryStore) -> None:
    key = await memory.save_memory(store, USER, "住在杭州")
    turn = Writer(store=store, user_id=USER, thread_id="t1", message_id="gone")
    await update_memory(turn, key, "住在杭州西湖边")  # the turn is recorded as it writes
    await memory.UserMemory(store, USER).forget(key, actor=USER, via="chat")

    undone = await memory.UserMemory(store, USER).settle("t1", ["another"])

    assert undone == []
    assert await memory.get_memory(store, USER, key) is None
    assert words_left(await everything_kept_for(store, USER)) == []


# --------------------------------------------------------------------------- the store API


STORED = plan_put("k", {"content": "Likes tea", "pinned": True}, None, now="2026-01-01")


@pytest.mark.parametrize(
    ("sent", "stored", "refusal"),
    [
        ({"content": "Likes tea", "history": [{"content": "Likes coffee"}]}, STORED, "history"),
        ({"content": "Likes tea", "history": []}, {**STORED, "history": [{}]}, "history"),
        ({"content": "Likes tea", "status": "superseded"}, STORED, "status"),
        ({"content": "Likes tea", "superseded_by": "other"}, STORED, "superseded_by"),
        ({"content": "Likes tea", "supersedes": "older"}, None, "supersedes"),
        ({"content": "Likes tea", "valid_until": "2020-01-01"}, None, "valid_until"),
        ({"content": "Likes tea", "mentions": 99}, STORED, "mentions"),
        ({"content": "Likes tea", "pinned": "yes"}, STORED, "pinned"),
        ({"content": "Likes tea", "confidence": 7}, None, "confidence"),
        ({"category": "preference"}, None, "content"),
        ({"content": "x" * 501}, None, "at most 500"),
        ({"content": "   "}, None, "cannot be empty"),
        (
            {"content": "Liked tea"},
            {**STORED, "status": "superseded", "pinned": False},
            "superseded",
        ),
    ],
)
def test_a_fact_put_through_the_store_api_cannot_forge_what_the_memory_layer_keeps(
    sent: dict[str, Any], stored: dict[str, Any] | None, refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal):
        plan_put("k", sent, stored, now="2026-02-01")


def test_a_fact_read_changed_and_put_back_keeps_its_history() -> None:
    """A client that gets a fact, changes its content and puts the whole value back."""
    sent = {**STORED, "content": "Likes green tea", "updated_at": "stale", "lang": "zh"}

    value = plan_put("k", sent, STORED, now="2026-02-01")

    assert value["content"] == "Likes green tea"
    assert value["history"] == [
        {"event": "updated", "content": "Likes tea", "at": "2026-02-01", "thread_id": None}
    ]
    assert (value["updated_at"], value["created_at"], value["lang"]) == (
        "2026-02-01",
        "2026-01-01",
        "en",
    )
    assert plan_put("k", dict(STORED), STORED, now="2026-02-01") == STORED  # nothing changed
    assert plan_put("k", {"content": "Likes tea", "speaker": "Al"}, STORED, now="x")["pinned"]


class User:
    """The least `Auth.types.AuthContext` needs of a user."""

    def __init__(self, identity: str) -> None:
        self.identity = identity
        self.display_name = identity
        self.is_authenticated = True
        self.permissions: list[str] = []


def store_context(identity: str, action: Any, *, admin: bool = False) -> Auth.types.AuthContext:
    return Auth.types.AuthContext(
        user=User(identity),  # type: ignore[arg-type]
        permissions=[ADMIN_PERMISSION if admin else USER_PERMISSION],
        resource="store",
        action=action,
    )


@pytest.fixture
def server_store(store: InMemoryStore, monkeypatch: pytest.MonkeyPatch) -> InMemoryStore:
    """The store the auth handler reaches as the server's."""

    async def the_store() -> BaseStore:
        return store

    monkeypatch.setattr(auth, "server_store", the_store)
    return store


async def test_a_store_api_delete_forgets_the_fact_and_audits_it_via_api(
    server_store: InMemoryStore,
) -> None:
    key = await memory.save_memory(server_store, USER, "Lives in Hangzhou")
    payload = {"namespace": ("user_facts", USER), "key": key}

    assert await auth.on_store(store_context(USER, "delete"), payload) is True

    assert await memory.get_memory(server_store, USER, key) is None
    [entry] = changes(await memory.list_audit(server_store, USER))
    assert (entry["action"], entry["via"], entry["actor"], entry["content"]) == (
        "forget",
        "api",
        USER,
        memory.FORGOTTEN,
    )
    episode = {"namespace": ("user_episodes", USER), "key": "t1"}
    assert await auth.on_store(store_context(USER, "delete"), episode) is True
    assert len(changes(await memory.list_audit(server_store, USER))) == 1  # episodes are not facts


async def test_a_store_api_episode_is_written_by_the_memory_layer(
    server_store: InMemoryStore,
) -> None:
    """An episode put through the store API (the retention job's) is recalled at once."""
    alice = memory.UserMemory(server_store, USER)
    await alice.save_episode(thread_id="t1", summary="Planned a trip to Kyoto in April.")
    assert [item.key for item in await alice.episodes("Kyoto", limit=5)] == ["t1"]  # warm
    revision = index_revision_location(memory.user_episodes_namespace(USER))
    before = await server_store.aget(*revision)
    summary = "Booked a violin lesson for Tuesday."
    episode = {"content": summary, "thread_id": "t2", "ended_at": "2026-03-03T10:00:00+00:00"}
    payload: dict[str, Any] = {
        "namespace": ("user_episodes", USER),
        "key": "t2",
        "value": episode,
        "index": False,
    }

    await auth.on_store(store_context(USER, "put"), payload)

    after = await server_store.aget(*revision)
    assert before is not None and after is not None and after.value != before.value
    assert payload["value"] == episode and payload["index"] is None
    found = await alice.episodes("violin lesson", limit=1)
    assert [(item.key, item.value["content"]) for item in found] == [("t2", summary)]
    delete = {"namespace": ("user_episodes", USER), "key": "t2"}
    assert await auth.on_store(store_context(USER, "delete"), delete) is True
    assert [item.key for item in await alice.episodes()] == ["t1"]


async def test_a_store_api_put_is_written_by_the_memory_layer(server_store: InMemoryStore) -> None:
    key = await memory.save_memory(server_store, USER, "Likes tea", category="preference")
    payload: dict[str, Any] = {
        "namespace": ("user_facts", USER),
        "key": key,
        "value": {"content": "Likes green tea", "mentions": 1, "index": "ignored"},
        "index": False,
    }

    await auth.on_store(store_context(USER, "put"), payload)

    stored = await memory.get_memory(server_store, USER, key)
    assert stored is not None and payload["value"] == stored.value  # the platform rewrites it
    assert payload["index"] is None
    assert stored.value["category"] == "preference"
    assert [h["content"] for h in stored.value["history"]] == ["Likes tea"]
    [entry] = changes(await memory.list_audit(server_store, USER))
    assert (entry["action"], entry["content"], entry["new_content"], entry["via"]) == (
        "correct",
        "Likes tea",
        "Likes green tea",
        "api",
    )


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ({"content": "Likes tea", "history": [{"event": "updated", "content": "x"}]}, "history"),
        ({"content": "Likes tea", "status": "superseded", "superseded_by": "k2"}, "status"),
        ({"content": "Likes tea", "pinned": 1}, "pinned"),
        ({"text": "Likes tea"}, "content"),
    ],
)
async def test_a_store_api_put_the_memory_layer_refuses_answers_422(
    server_store: InMemoryStore, value: dict[str, Any], detail: str
) -> None:
    payload = {"namespace": ("user_facts", USER), "key": "k", "value": value}

    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await auth.on_store(store_context(USER, "put"), payload)

    assert refused.value.status_code == 422 and detail in str(refused.value.detail)
    assert await current_facts(server_store, USER) == []


async def test_the_store_api_writes_nothing_for_another_user(server_store: InMemoryStore) -> None:
    key = await memory.save_memory(server_store, "bob", "Lives in Paris")
    for action, extra in (("delete", {}), ("put", {"value": {"content": "Lives nowhere"}})):
        payload = {"namespace": ("user_facts", "bob"), "key": key, **extra}
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            await auth.on_store(store_context(USER, action), payload)
        assert refused.value.status_code == 403
    assert await current_facts(server_store, "bob") == ["Lives in Paris"]
    assert changes(await memory.list_audit(server_store, "bob")) == []


async def test_the_maintenance_token_deletes_a_users_fact_on_the_record(
    server_store: InMemoryStore,
) -> None:
    key = await memory.save_memory(server_store, "bob", "Lives in Paris")
    payload = {"namespace": ("user_facts", "bob"), "key": key}

    await auth.on_store(store_context(ADMIN_IDENTITY, "delete", admin=True), payload)

    [entry] = changes(await memory.list_audit(server_store, "bob"))
    assert (entry["action"], entry["actor"], entry["via"]) == ("forget", ADMIN_IDENTITY, "api")


async def test_the_memory_routes_record_the_client_name_but_not_as_the_route(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``x-assistant-client`` is whatever the client says: kept as ``client``, never ``via``."""
    key = await memory.save_memory(store, USER, "Lives in Hangzhou")

    async def scope(request: Request) -> RunScope:
        return RunScope(user_id=USER, thread_id=None, store=store, context=Context())

    monkeypatch.setattr(webapp, "_scope", scope)
    request = Request(
        {
            "type": "http",
            "method": "DELETE",
            "path": f"/memory/facts/{key}",
            "path_params": {"key": key},
            "headers": [(b"x-assistant-client", b"cli")],
            "query_string": b"",
        }
    )

    response = await webapp.forget_fact(request)

    body = json.loads(bytes(response.body))
    assert (body["forgotten"]["via"], body["forgotten"]["client"]) == ("api", "cli")
    assert "Hangzhou" not in json.dumps(body)
    assert body["erased"]["versions"] == 1


# --------------------------------------------------------------------------- retention


class FakeStoreClient:
    """The slice of langgraph-sdk's store client that retention uses, over a real store."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        self.deleted: list[tuple[tuple[str, ...], str]] = []

    async def list_namespaces(
        self, *, prefix: list[str], max_depth: int, limit: int, offset: int
    ) -> dict[str, Any]:
        found = await self.store.alist_namespaces(
            prefix=tuple(prefix), max_depth=max_depth, limit=limit, offset=offset
        )
        return {"namespaces": [list(namespace) for namespace in found]}

    async def search_items(
        self, namespace: list[str], *, filter: Any, limit: int, offset: int
    ) -> dict[str, Any]:
        items = await self.store.asearch(
            tuple(namespace), filter=filter, limit=limit, offset=offset
        )
        return {"items": [{"key": item.key, "value": item.value} for item in items]}

    async def delete_item(self, namespace: list[str], key: str) -> None:
        self.deleted.append((tuple(namespace), key))
        await self.store.adelete(tuple(namespace), key)


class FakeThreadsClient:
    async def search(self, *, limit: int, offset: int) -> list[dict[str, Any]]:
        return []


class FakeClient:
    def __init__(self, store: BaseStore) -> None:
        self.store = FakeStoreClient(store)
        self.threads = FakeThreadsClient()


async def test_retention_deletes_audit_entries_older_than_the_limit(store: InMemoryStore) -> None:
    for user in ("alice", "bob"):
        key = await memory.save_memory(store, user, "Likes tea")
        await memory.UserMemory(store, user).forget(key, actor=user, via="chat")
    [old] = changes(await memory.list_audit(store, "bob"))
    await store.aput(
        memory.user_audit_namespace("bob"),
        "ancient",
        {**old, "at": (datetime.now(UTC) - timedelta(days=400)).isoformat()},
        index=False,
    )
    client = FakeClient(store)

    dry = await retention.prune(
        client,  # type: ignore[arg-type]
        idle_days=90,
        superseded_days=365,
        dry_run=True,
    )
    report = await retention.prune(
        client,  # type: ignore[arg-type]
        idle_days=90,
        superseded_days=365,
    )

    assert dry.audit == report.audit == [("bob", "ancient")]
    assert client.store.deleted == [(("user_audit", "bob"), "ancient")]
    assert len(changes(await memory.list_audit(store, "bob"))) == len(
        changes(await memory.list_audit(store, USER))
    )
    later = await retention.prune(
        client,  # type: ignore[arg-type]
        idle_days=90,
        superseded_days=365,
        audit_days=1,
        dry_run=True,
        now=datetime.now(UTC) + timedelta(days=2),
    )
    # each user's addition and forget
    assert sorted(user for user, _ in later.audit) == ["alice", "alice", "bob", "bob"]


def test_the_audit_retention_setting_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant.config.settings import get_retention_settings

    monkeypatch.setenv("ASSISTANT_AUDIT_DAYS", "30")
    assert get_retention_settings().audit_days == 30
    monkeypatch.setenv("ASSISTANT_AUDIT_DAYS", "0")
    with pytest.raises(ValueError, match="ASSISTANT_AUDIT_DAYS must be at least 1"):
        get_retention_settings()
    monkeypatch.setenv("ASSISTANT_AUDIT_DAYS", "a year")
    with pytest.raises(ValueError, match="ASSISTANT_AUDIT_DAYS.*'a year'"):
        get_retention_settings()


# --------------------------------------------------------------------------- complete, crash-safe


PIN = "Bank PIN is 4417, tell no one"


async def seed_many_quotes(store: BaseStore, *, episodes: int, heard: int, held: int) -> str:
    """A fact quoted by more episodes, heard records and held messages than any page holds."""
    mem = memory.UserMemory(store, USER)
    key = await mem.save(PIN)
    for n in range(episodes):
        await mem.save_episode(thread_id=f"e{n}", summary=f"Talk {n}: the user said {PIN}.")
    for n in range(heard):
        await record_heard(
            store, USER, thread_id=f"h{n}", message_id="m", text=PIN, outcome="nothing", reason=""
        )
    for n in range(held):
        await hold_message(store, USER, thread_id=f"k{n}", message_id="m", text=f"{PIN}!")
    return key


async def test_a_forget_reads_everything_past_every_former_cap(store: InMemoryStore) -> None:
    key = await seed_many_quotes(store, episodes=230, heard=230, held=120)

    forgotten = await memory.UserMemory(store, USER).forget(key, actor=USER, via="chat")

    assert forgotten is not None
    assert (forgotten.erased["episodes"], forgotten.erased["heard"]) == (230, 230)
    assert forgotten.erased["held"] == 120
    kept = json.dumps(await everything_kept_for(store, USER), ensure_ascii=False)
    assert "PIN is 4417" not in kept


class CrashAfter(Exception):
    """The server died here."""


async def crash_in_the_middle(store: InMemoryStore, monkeypatch: pytest.MonkeyPatch) -> str:
    """Start a forget of a fact 60 episodes quote, and kill it after 20 of them."""
    key = await seed_many_quotes(store, episodes=60, heard=3, held=0)
    written = 0
    real = Writer.put_episode

    async def dies(self: Writer, thread_id: str, value: dict[str, Any] | None) -> None:
        nonlocal written
        if written == 20:
            raise CrashAfter
        written += 1
        await real(self, thread_id, value)

    monkeypatch.setattr(Writer, "put_episode", dies)
    with pytest.raises(CrashAfter):
        await memory.UserMemory(store, USER).forget(key, actor=USER, via="api", client="cli")
    monkeypatch.setattr(Writer, "put_episode", real)
    quoting = [
        item
        for item in await store.asearch(memory.user_episodes_namespace(USER), limit=1000)
        if "4417" in item.value["content"]
    ]
    assert await memory.get_memory(store, USER, key) is None  # the fact went first
    assert len(quoting) == 40  # 20 episodes lost the words before the crash
    return key


async def test_a_retry_after_a_crash_finishes_the_forget(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = await crash_in_the_middle(store, monkeypatch)

    retried = await memory.UserMemory(store, USER).forget(key, actor=USER, via="api")

    assert retried is not None  # not "no such fact"
    assert retried.content == PIN
    assert retried.erased["episodes"] == 40 and retried.erased["versions"] == 0
    assert "PIN is 4417" not in json.dumps(
        await everything_kept_for(store, USER), ensure_ascii=False
    )
    forgets = [e for e in await memory.list_audit(store, USER) if e["action"] == "forget"]
    assert [(e["fact_key"], e["via"], e["client"]) for e in forgets] == [(key, "api", "cli")]
    assert await memory.UserMemory(store, USER).forget(key, actor=USER, via="api") is None


async def test_start_up_finishes_a_forget_cut_short(
    store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = await crash_in_the_middle(store, monkeypatch)

    assert await memory.resume_forgets(store) == {USER: 1}

    assert "PIN is 4417" not in json.dumps(
        await everything_kept_for(store, USER), ensure_ascii=False
    )
    [forget] = [e for e in await memory.list_audit(store, USER) if e["action"] == "forget"]
    assert (forget["fact_key"], forget["via"], forget["client"]) == (key, "api", "cli")
    assert await memory.resume_forgets(store) == {}


async def test_a_forget_drops_the_embedders_cached_vectors_of_its_words(
    store: InMemoryStore,
) -> None:
    from assistant.inference.e5 import E5Embeddings

    key = await memory.UserMemory(store, USER).save(PIN)
    E5Embeddings._cache[(USER, False, PIN)] = [0.0]
    E5Embeddings._cache[(USER, True, f"Talk: {PIN}")] = [0.0]
    E5Embeddings._cache[(USER, True, "Likes tea")] = [0.0]

    forgotten = await memory.UserMemory(store, USER).forget(key, actor=USER, via="chat")

    assert forgotten is not None and forgotten.erased["cached"] == 2
    assert (USER, False, PIN) not in E5Embeddings._cache
    assert (USER, True, f"Talk: {PIN}") not in E5Embeddings._cache
    assert E5Embeddings._cache.pop((USER, True, "Likes tea")) == [0.0]  # other texts stay


async def test_every_addition_is_audited_with_its_path_and_client(store: InMemoryStore) -> None:
    mem = memory.UserMemory(store, USER)
    report = await mem.apply(
        [
            memory.MemoryOperation(
                action="add", content="Plays the cello", category="preference", confidence=0.9
            )
        ],
        [],
        min_confidence=0.0,
        via="mcp",
        client="claude-code",
    )
    [key] = report.added

    [entry] = await memory.list_audit(store, USER)

    assert {k: entry[k] for k in ("action", "fact_key", "content", "via", "client")} == {
        "action": "add",
        "fact_key": key,
        "content": "Plays the cello",
        "via": "mcp",
        "client": "claude-code",
    }


async def test_search_by_text_finds_what_matches_and_nothing_else(store: InMemoryStore) -> None:
    mem = memory.UserMemory(store, USER)
    await mem.save("Vegetarian since 2019")
    await mem.save("Plays the cello in an orchestra")

    found = await mem.search("plays the cello", limit=5)
    unrelated = await mem.search("skydiving lessons in Peru", limit=5)

    assert [item.value["content"] for item in found] == ["Plays the cello in an orchestra"]
    assert found[0].score is not None and found[0].score >= MATCH_FLOOR
    assert unrelated == []
