"""The store index's embeddings, as langgraph.json loads them (``store.index.embed``)."""

from assistant.inference.models import get_embeddings

embeddings = get_embeddings()
