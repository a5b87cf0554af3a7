"""The ``official`` profile answers as the reference server does, text for text: the same calls,
each made of ``@modelcontextprotocol/server-filesystem`` (npm, pinned) and of ``vfs-mcp
--profile official`` over their own copy of one folder, give the same blocks (the folder's
path written as ``<root>`` in both).

Where we differ on purpose (docs/profile-official.md: errors carry a code; an ``oldText`` found
twice is refused; ``get_file_info`` gives a folder size 0 and times in ISO 8601 UTC; ``tail``
of a file that ends in a newline) the calls are left out or masked here, and the differences
asserted in test_profile_official.py.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import png
from emulators import Unavailable, npm_bin, unavailable
from mcp import Client, StdioServerParameters
from mcp_types import TextContent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REFERENCE = ("@modelcontextprotocol/server-filesystem", "2026.8.31")

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_allowed_directories", {}),
    ("read_text_file", {"path": "<root>/notes.txt"}),
    ("read_text_file", {"path": "<root>/notes.txt", "head": 2}),
    ("read_text_file", {"path": "<root>/last.txt", "tail": 2}),
    ("read_file", {"path": "<root>/notes.txt"}),
    ("read_media_file", {"path": "<root>/red.png"}),
    ("read_multiple_files", {"paths": ["<root>/notes.txt", "<root>/src/app.py"]}),
    ("list_directory", {"path": "<root>"}),
    ("list_directory_with_sizes", {"path": "<root>/src"}),
    ("list_directory_with_sizes", {"path": "<root>/src", "sortBy": "size"}),
    ("directory_tree", {"path": "<root>"}),
    ("directory_tree", {"path": "<root>", "excludePatterns": ["src"]}),
    ("search_files", {"path": "<root>", "pattern": "**/*.py"}),
    ("search_files", {"path": "<root>", "pattern": "*.md"}),
    ("write_file", {"path": "<root>/new.txt", "content": "fresh\n"}),
    ("write_file", {"path": "<root>/notes.txt", "content": "one\ntwo\nthree\nfour\n"}),
    ("edit_file", {"path": "<root>/notes.txt", "edits": [{"oldText": "two", "newText": "2"}], "dryRun": True}),
    ("edit_file", {"path": "<root>/notes.txt", "edits": [{"oldText": "three", "newText": "3"}]}),
    ("create_directory", {"path": "<root>/made/deep"}),
    ("create_directory", {"path": "<root>/made/deep"}),
    ("move_file", {"source": "<root>/new.txt", "destination": "<root>/made/new.txt"}),
    ("read_text_file", {"path": "<root>/made/new.txt"}),
    ("get_file_info", {"path": "<root>/notes.txt"}),
    ("directory_tree", {"path": "<root>/made"}),
]
"""Every tool the two servers word alike, writes among them (each copy changes as the other)."""


TIMES = re.compile(r"^(created|modified|accessed): .*$", re.MULTILINE)
"""get_file_info's times: the copies were made moments apart, and ours are ISO 8601 UTC on purpose."""


def seeded(folder: Path) -> Path:
    folder.mkdir()
    (folder / "notes.txt").write_text("one\ntwo\nthree\n")
    (folder / "last.txt").write_text("a\nb\nc")  # no final newline: on purpose our tail differs after one
    (folder / "red.png").write_bytes(png())
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("print('hi')\n")
    (folder / "src" / "util.py").write_text("x = 1\n" * 40)
    return folder.resolve()


def filled(value: Any, root: Path) -> Any:
    if isinstance(value, str):
        return value.replace("<root>", str(root))
    if isinstance(value, list):
        return [filled(item, root) for item in value]
    if isinstance(value, dict):
        return {key: filled(item, root) for key, item in value.items()}
    return value


async def answers(params: StdioServerParameters, root: Path) -> list[list[str]]:
    """Each call's blocks (a text's text, any other block's JSON), ``root`` written as ``<root>``."""
    out = []
    async with Client(params) as client:
        for tool, arguments in CALLS:
            result = await client.call_tool(tool, filled(arguments, root))
            assert not result.is_error, (tool, result.content)
            blocks = [
                block.text if isinstance(block, TextContent) else block.model_dump_json() for block in result.content
            ]
            out.append([TIMES.sub(r"\1: <time>", block.replace(str(root), "<root>")) for block in blocks])
    return out


async def test_every_tool_answers_in_the_reference_servers_own_words(tmp_path: Path) -> None:
    try:
        reference = npm_bin(REFERENCE, "mcp-server-filesystem")
    except Unavailable as exc:
        unavailable(exc)
    theirs_root, ours_root = seeded(tmp_path / "theirs"), seeded(tmp_path / "ours")
    theirs = await answers(StdioServerParameters(command=str(reference), args=[str(theirs_root)]), theirs_root)
    ours = await answers(
        StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", str(ours_root), "--profile", "official"]),
        ours_root,
    )
    differ = [(call, t, o) for call, t, o in zip(CALLS, theirs, ours, strict=True) if t != o]
    assert not differ, "\n\n".join(f"{call}\nreference: {t!r}\nvfs-mcp:   {o!r}" for call, t, o in differ)
    assert sorted(p.relative_to(ours_root) for p in ours_root.rglob("*")) == sorted(
        p.relative_to(theirs_root) for p in theirs_root.rglob("*")
    )
    assert (ours_root / "notes.txt").read_bytes() == (theirs_root / "notes.txt").read_bytes()
