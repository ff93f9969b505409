"""The search engine over a user's facts: the per-user index, its freshness and sync, ranking."""
