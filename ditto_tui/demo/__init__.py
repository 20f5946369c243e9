"""Demo parts used by the bundled graphs: workspace file tools (and, later, the demo MCP server)."""
