"""The least an MCP server built on the SDK does: one tool that returns a constant, over stdio.
Its round trip is the floor of every call of ours (the edit row's floor is this plus the
durable write's own steps): ``python benchmarks/bare_server.py``.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


if __name__ == "__main__":
    server.run()
