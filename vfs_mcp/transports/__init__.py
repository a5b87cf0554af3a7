"""The ways in: MCP clients over stdio and streamable HTTP (its session limits and resumable
streams), and Python programs through the fsspec protocol ``vfs`` (``fsspec_protocol``, which
loads no part of the MCP SDK). Nothing is imported here: each way in loads only what it needs."""
