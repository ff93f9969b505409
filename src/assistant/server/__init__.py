"""The server's wiring: auth, routes, MCP, the console app, start-up, storage."""
