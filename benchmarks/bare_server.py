"""The least an MCP server built on the SDK does, over stdio: ``ping`` returns a constant (its
round trip is the floor of every call of ours), ``edit`` makes the durable edit the edit row
asks of ours with nothing else (no undo record, no diff, no check of what it read): its round
trip is the edit row's floor. ``python benchmarks/bare_server.py``.
"""

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


def durable_edit(path: Path, old: str, new: str) -> None:
    """The least a durable edit does: read, replace the first ``old``, write a temp file, fsync
    it, rename it over the file, fsync the folder."""
    temp = path.with_name(f".{path.name}.floor")
    text = path.read_bytes().decode()
    with temp.open("wb") as out:
        out.write(text.replace(old, new, 1).encode())
        out.flush()
        os.fsync(out.fileno())
    os.rename(temp, path)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


@server.tool()
def edit(path: str, old: str, new: str) -> str:
    """Replaces the first ``old`` in the file at ``path`` by ``new``, durably."""
    durable_edit(Path(path), old, new)
    return "edited"


if __name__ == "__main__":
    server.run()
