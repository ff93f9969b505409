"""The store index's embeddings, as langgraph.json loads them (``store.index.embed``)."""

from assistant.models import get_embeddings

embeddings = get_embeddings()
