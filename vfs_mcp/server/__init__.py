"""The MCP server: ``build_server`` and the call pipeline every tool call passes, the
profiles' tools registered on the SDK, resources, subscriptions, roots and metrics."""
