"""MCP: the client port, the registry and (later) the SDK adapter."""
