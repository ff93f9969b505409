"""The model seam: clear errors without settings, the right client with them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from langgraph.store.memory import InMemoryStore

from assistant.inference import models
from assistant.inference.models import (
    E5Embeddings,
    ModelNotConfiguredError,
    get_chat_model,
    get_embeddings,
)
from assistant.memory import UserMemory, about_food
from stub_openai import StubOpenAI


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    models._build_chat_model.cache_clear()
    get_embeddings.cache_clear()
    yield
    models._build_chat_model.cache_clear()
    get_embeddings.cache_clear()


def test_no_settings_raise_an_error_that_says_what_to_set() -> None:
    with pytest.raises(ModelNotConfiguredError) as caught:
        get_chat_model()
    message = str(caught.value)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ASSISTANT_MODEL"):
        assert name in message


def test_context_model_alone_is_not_enough() -> None:
    with pytest.raises(ModelNotConfiguredError):
        get_chat_model("gpt-4o")


def test_base_url_without_model_name_asks_for_assistant_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    with pytest.raises(ModelNotConfiguredError) as caught:
        get_chat_model()
    assert "ASSISTANT_MODEL" in str(caught.value)
    assert "http://127.0.0.1:11434/v1" in str(caught.value)


def test_openai_key_alone_uses_gpt_4o_mini(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = get_chat_model()
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "gpt-4o-mini"
    assert model.request_timeout == 60
    assert model.max_retries == 2
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "sk-test"  # type: ignore[union-attr]


def test_timeout_and_retries_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ASSISTANT_MODEL_TIMEOUT_S", "12.5")
    monkeypatch.setenv("ASSISTANT_MODEL_MAX_RETRIES", "0")
    monkeypatch.setenv("ASSISTANT_MODEL_TEMPERATURE", "0")
    model = get_chat_model()
    assert isinstance(model, ChatOpenAI)
    assert model.request_timeout == 12.5
    assert model.max_retries == 0
    assert model.temperature == 0


def test_compatible_server_with_model_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("ASSISTANT_MODEL", "qwen2.5:7b")
    model = get_chat_model()
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base == "http://127.0.0.1:11434/v1"
    assert model.model_name == "qwen2.5:7b"
    # A local server that needs no key still gets a placeholder, not the user's key.
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == models.NO_KEY_PLACEHOLDER  # type: ignore[union-attr]


def test_context_model_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("ASSISTANT_MODEL", "qwen2.5:7b")
    model = get_chat_model("  deepseek-chat ")
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "deepseek-chat"


def test_same_settings_share_one_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert get_chat_model() is get_chat_model()
    assert get_chat_model("gpt-4o") is not get_chat_model()


def test_default_embeddings_are_the_offline_e5() -> None:
    assert isinstance(get_embeddings(), E5Embeddings)


def test_served_embeddings_need_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_EMBEDDINGS_MODEL", "text-embedding-3-small")
    with pytest.raises(ModelNotConfiguredError, match="ASSISTANT_EMBEDDINGS_MODEL"):
        get_embeddings()


def test_served_embeddings_are_asked_for_384_dims(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_EMBEDDINGS_MODEL", "text-embedding-3-small")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    embeddings = get_embeddings()
    assert isinstance(embeddings, OpenAIEmbeddings)
    assert embeddings.dimensions == models.EMBEDDING_DIMS
    assert embeddings.check_embedding_ctx_length is False  # no tiktoken download


async def test_memory_works_on_a_served_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A served model's embeddings (the real client, a stub provider) behind the memory layer.

    `OpenAIEmbeddings` is a pydantic model, which cannot be hashed: a cache keyed by the
    embedder once failed every write.
    """
    stub = StubOpenAI().start()
    try:
        monkeypatch.setenv("ASSISTANT_EMBEDDINGS_MODEL", "stub-embed")
        monkeypatch.setenv("ASSISTANT_EMBEDDINGS_BASE_URL", stub.base_url)
        embeddings = get_embeddings()
        assert isinstance(embeddings, OpenAIEmbeddings)
        store = InMemoryStore(
            index={"dims": models.EMBEDDING_DIMS, "embed": embeddings, "fields": ["content"]}
        )
        user = UserMemory(store, "served-user")
        await user.save("Lives in Oslo", context="Where do you live these days?")
        await user.save("Allergic to peanuts", category="constraint")
        found = await user.recall("where do I live now?", limit=1)
        assert [item.value["content"] for item in found] == ["Lives in Oslo"]
        searched = await user.search("peanuts", limit=3)
        assert [item.value["content"] for item in searched] == ["Allergic to peanuts"]
        assert isinstance(await about_food(store, "what should I cook tonight?"), bool)
        assert any(request.get("input") for request in stub.requests)
    finally:
        stub.stop()
