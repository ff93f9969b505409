"""The graph's nodes, one per file: recall, respond, remember and compress."""
