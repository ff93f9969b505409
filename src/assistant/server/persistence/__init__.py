"""The durable checkpointer and store: Postgres, run deletion, thread records."""
