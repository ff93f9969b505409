"""The HTTP middlewares around every route, one rule a file, and their ASGI plumbing."""
