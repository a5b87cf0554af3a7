"""The schema table a server starts with (``vfs_mcp.server.schemas``) is what the MCP SDK
generates from the adapters now, and a server built from it lists and calls its tools exactly
as one whose argument models were all built at start."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from vfs_mcp import profiles
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.server import schemas, sdk, tools
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

PROFILE_SETS = [("default",), ("official",), ("default", "fs", "ide")]


def test_the_table_is_what_the_sdk_generates_now() -> None:
    assert schemas.TABLE.read_bytes() == schemas.written(tools.generated_schemas()), (
        "run: python scripts/gen_tool_reference.py"
    )


def test_every_tool_of_every_profile_is_in_the_table() -> None:
    table = schemas.known()
    missing = [row.key for p in profiles.PROFILES for row in profiles.tools_of(p) if row.where not in table]
    assert missing == []


async def listed(chosen: tuple[str, ...]) -> str:
    """``tools/list`` as the client receives it, in its order (properties included)."""
    server = build_server(open_mounts([MountSpec("memory://schemas")]), Settings(profiles=chosen))
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    return json.dumps([tool.model_dump(by_alias=True, exclude_none=True) for tool in tools])


@pytest.mark.parametrize("chosen", PROFILE_SETS, ids="+".join)
async def test_tools_list_is_the_same_with_and_without_the_table(
    chosen: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    from_table = await listed(chosen)
    monkeypatch.setattr(schemas, "known", dict)  # every tool registered the SDK's way

    assert await listed(chosen) == from_table


def test_a_planned_tool_builds_its_argument_model_only_when_first_asked() -> None:
    server = build_server(open_mounts([MountSpec("memory://schemas")]), Settings())
    tool = sdk.registered_tool(server, "grep_files")
    assert tool is not None and isinstance(tool.fn_metadata, sdk.ArgumentsOnFirstUse)
    assert tool.fn_metadata._built is None

    fields = tool.fn_metadata.arg_model.model_fields

    assert "pattern" in fields and "progress" not in fields and tool.context_kwarg == "progress"


CHANGE = re.compile(r'(?<=change )[\w-]{22}|(?<="change_id": ")[\w-]{22}')
"""A change id, in a reply's text or its fields: new on every run."""


async def called(monkeypatch: pytest.MonkeyPatch | None) -> list[Any]:
    if monkeypatch is not None:
        monkeypatch.setattr(schemas, "known", dict)
    server = build_server(open_mounts([MountSpec("memory://schemas")]), Settings())
    async with Client(server) as client:
        calls = [
            ("write_file", {"path": "/a.txt", "content": "one\ntwo\n"}),
            ("read_file_lines", {"path": "/a.txt", "offset": 1, "limit": 1}),
            ("read_file_lines", {"path": "/a.txt", "offset": -1}),
            ("read_file_lines", {"path": "/a.txt", "offset": "two"}),
            ("edit_file", {"path": "/a.txt", "edits": [{"oldText": "one", "newText": "1"}]}),
            ("edit_file", {"path": "/a.txt", "edits": [{"old": "one"}]}),
        ]
        results = [(await client.call_tool(name, arguments)).model_dump() for name, arguments in calls]
    return [json.loads(CHANGE.sub("${change}", json.dumps(result))) for result in results]  # ids are new every run


async def test_a_planned_tool_answers_every_call_as_one_built_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    planned = await called(None)

    assert [r["is_error"] for r in planned] == [False, False, True, True, False, True]
    assert await called(monkeypatch) == planned


def modules_loaded_by(script: str) -> set[str]:
    """The modules a fresh interpreter has imported once ``script`` has run."""
    script += "import sys\nprint(' '.join(sorted(sys.modules)))\n"
    return set(
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    )


def test_listing_the_tools_loads_no_adapter_and_no_operation_that_only_a_call_needs() -> None:
    # A fresh interpreter: what a server started and asked for its tools has imported (the
    # SDK's listing, without the warm-up our listing starts after it).
    script = (
        "import anyio\n"
        "from mcp.server.mcpserver import MCPServer\n"
        "from vfs_mcp.jail.mounts import MountSpec, open_mounts\n"
        "from vfs_mcp.server.build import build_server\n"
        "server = build_server(open_mounts([MountSpec('memory://lazy')]))\n"
        "assert len(anyio.run(MCPServer.list_tools, server)) > 20\n"
    )
    loaded = modules_loaded_by(script)

    later = {
        "vfs_mcp.profiles.default.text",
        "vfs_mcp.profiles.default.patches",
        "vfs_mcp.profiles.default.line_edits",
        "vfs_mcp.profiles.default.files",
        "vfs_mcp.ops.edits.replace",
        "vfs_mcp.ops.edits.patch",
    }
    assert loaded & later == set()
    assert "vfs_mcp.profiles.default" in loaded


SERVED_BY_THE_COMMAND_LINE = (
    "served = []\n"
    "made = main.server_from\n"
    "main.server_from = lambda *a, **k: served.append(made(*a, **k)) or served[-1]\n"
    "main.run_until_stopped = lambda run, banner=None: 0\n"
    "main.settle_memory = lambda: None\n"
)
"""A script's lines after ``from vfs_mcp.cli import main``: each ``main.serve(ARGS)`` then builds
its server as the command line does, appends it to ``served`` and returns at once."""


def test_a_server_process_lists_its_tools_without_loading_rich_or_the_review_layer(tmp_path: Path) -> None:
    # Started as the command line starts it (its own logging set up first): the SDK's logging
    # setup would only import rich to build a handler nothing uses, and no mount is under review.
    script = (
        "import anyio\n"
        "from mcp.server.mcpserver import MCPServer\n"
        "from vfs_mcp.cli import main\n"
        f"{SERVED_BY_THE_COMMAND_LINE}"
        f"main.serve([{str(tmp_path)!r}])\n"
        "assert len(anyio.run(MCPServer.list_tools, served[0])) > 20\n"
    )
    loaded = modules_loaded_by(script)

    unneeded = ("rich", "vfs_mcp_backends.overlay", "vfs_mcp_backends.layers", "vfs_mcp.review")
    assert sorted(m for m in loaded if m.startswith(unneeded)) == []
    assert "vfs_mcp_backends.local" in loaded


def test_once_the_tools_are_listed_what_calls_need_is_imported_on_a_thread_of_its_own() -> None:
    script = (
        "import anyio\n"
        "from vfs_mcp.jail.mounts import MountSpec, open_mounts\n"
        "from vfs_mcp.server.build import build_server\n"
        "from vfs_mcp.settings import Settings\n"
        "server = build_server(open_mounts([MountSpec('memory://warm')]), Settings(warm_up=True))\n"
        "assert server.warming is None\n"
        "anyio.run(server.list_tools)\n"
        "server.warming.join()\n"
    )
    loaded = modules_loaded_by(script)

    assert {
        "vfs_mcp.profiles.default.text",
        "vfs_mcp.profiles.default.patches",
        "vfs_mcp.profiles.default.line_edits",
        "vfs_mcp.ops.edits.replace",
        "vfs_mcp.ops.edits.patch",
        "vfs_mcp.changes",
    } <= loaded


def test_the_server_processes_warm_up_and_a_server_built_inside_another_program_never_does(tmp_path: Path) -> None:
    # An embedded or in-process server runs inside someone else's process: a thread of its own
    # importing there breaks CPython before 3.11.8 when that process parses meanwhile (pytest).
    script = (
        "import anyio, threading\n"
        "from vfs_mcp.cli import main\n"
        "from vfs_mcp.jail.mounts import MountSpec, open_mounts\n"
        "from vfs_mcp.server.build import build_server\n"
        "from vfs_mcp.testing.harness import memory_fs, connect\n"
        f"{SERVED_BY_THE_COMMAND_LINE}"
        f"main.serve([{str(tmp_path)!r}])\n"
        f"main.serve([{str(tmp_path)!r}, '--transport', 'http', '--port', '0'])\n"
        "embedded = build_server(open_mounts([MountSpec('memory://embedded')]))\n"
        "async def harness():\n"
        "    async with connect(memory_fs({'a.txt': 'a'})) as client:\n"
        "        await client.list_tools()\n"
        "        await client.call_tool('read_file', {'path': 'a.txt'})\n"
        "        return any(t.name == 'vfs-mcp-warm' for t in threading.enumerate())\n"
        "print(anyio.run(harness))\n"
        "for server in [embedded, *served]:\n"
        "    anyio.run(server.list_tools)\n"
        "    print(server.warming is not None)\n"
    )
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout

    assert printed.split() == ["False", "False", "True", "True"]  # the harness, build_server; stdio, HTTP


def test_a_first_read_imports_no_part_of_the_write_path(tmp_path: Path) -> None:
    # A client that calls at once meets no warm-up (it starts after tools/list): what a read's
    # first call imports, it pays for.
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    script = (
        "import anyio\n"
        "from vfs_mcp.jail.mounts import MountSpec, open_mounts\n"
        "from vfs_mcp.server.build import build_server\n"
        f"server = build_server(open_mounts([MountSpec({str(tmp_path)!r})]))\n"
        "for name, arguments in [('read_file_lines', {'path': 'a.txt', 'offset': 1}),"
        " ('read_file', {'path': 'a.txt'}), ('list_allowed_directories', {})]:\n"
        "    assert not anyio.run(server.call_tool, name, arguments).is_error\n"
    )
    loaded = modules_loaded_by(script)

    writing = (
        "vfs_mcp.changes",
        "vfs_mcp.ops.files.write",
        "vfs_mcp.ops.edits.replace",
        "vfs_mcp.ops.edits.patch",
        "vfs_mcp.ops.diff.compare",
    )
    assert "vfs_mcp.ops.files.lines" in loaded
    assert sorted(m for m in loaded if m.startswith(writing)) == []


def warm_up_meanwhile(calls: str, warm_after: float | None = None) -> list[str]:
    """Whether the warm-up had imported the default profile's file adapters when ``calls`` (a
    script's lines, run in a fresh interpreter, that start it as ``warming`` and set ``during``
    to ``loaded()`` while calls are still made) looked, and once it is over (``warm_after``:
    the quiet it waits for, None for the server's own)."""
    script = (
        "import sys, threading, time\n"
        "from vfs_mcp.server import tools\n"
        "from vfs_mcp.settings import Settings\n"
        + ("" if warm_after is None else f"tools.WARM_AFTER = {warm_after}\n")
        + "loaded = lambda: 'vfs_mcp.profiles.default.files' in sys.modules\n"
        + calls
        + "print('during', during)\n"
        "warming.join()\n"
        "print('after', loaded())\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()


def test_the_warm_up_imports_nothing_while_a_call_is_in_flight() -> None:
    # The warm-up asks whether a call is in flight before each import: once it has asked twice,
    # it has seen one and gone round without importing.
    in_flight = (
        "asks = []\n"
        "asked_twice = threading.Event()\n"
        "def ask(timeout=None, wait=tools._NO_CALL.wait):\n"
        "    asks.append(timeout)\n"
        "    if len(asks) == 2:\n"
        "        asked_twice.set()\n"
        "    return wait(timeout)\n"
        "tools._NO_CALL.wait = ask\n"
        "with tools.in_flight():\n    warming = tools.warm(Settings())\n    asked_twice.wait(60)\n    during = loaded()\n"
    )

    assert warm_up_meanwhile(in_flight, 0.01) == ["during", "False", "after", "True"]


def test_the_warm_up_waits_while_calls_follow_each_other() -> None:
    # A script's calls one after the other: each imports what it needs, none shares the
    # interpreter with the warm-up (it starts once no call came for WARM_AFTER).
    calls = (
        "warming = tools.warm(Settings())\n"
        "for _ in range(100):\n"
        "    with tools.in_flight():\n"
        "        time.sleep(0.005)\n"
        "during = loaded()\n"
    )

    assert warm_up_meanwhile(calls, 0.1) == ["during", "False", "after", "True"]


def test_the_warm_up_waits_while_a_client_reads_each_large_reply_before_its_next_call() -> None:
    # A script reading 10 MB replies: its client parses each for some 30-60 ms before the next
    # call; a warm-up that started in that gap took the interpreter from the next read.
    calls = (
        "warming = tools.warm(Settings())\n"
        "for _ in range(8):\n"
        "    with tools.in_flight():\n"
        "        time.sleep(0.04)\n"
        "    time.sleep(0.1)\n"
        "during = loaded()\n"
    )

    assert warm_up_meanwhile(calls) == ["during", "False", "after", "True"]


def test_a_process_that_ends_while_the_warm_up_imports_stops_it_before_the_interpreter_finalizes() -> None:
    # A thread still importing while the interpreter finalizes crashes in native modules
    # (pydantic-core panicked under `vfs-mcp call`). Here the warm-up has begun 500 imports of
    # some work each when the script ends; a hook registered first runs last, after ours, and looks.
    script = (
        "import atexit, threading\n"
        "atexit.register(lambda: print('alive' if any(t.name == 'vfs-mcp-warm' and t.is_alive()"
        " for t in threading.enumerate()) else 'stopped'))\n"
        "from vfs_mcp.server import tools\n"
        "from vfs_mcp.settings import Settings\n"
        "begun = threading.Event()\n"
        "class Slow:\n"
        "    @property\n"
        "    def adapter(self):\n"
        "        begun.set()\n"
        "        sum(range(200_000))\n"
        "tools.profiles.tools_of = lambda profile: [Slow() for _ in range(500)]\n"
        "tools.WARM_AFTER = 0\n"
        "tools.warm(Settings())\n"
        "begun.wait()\n"
    )
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout

    assert printed.split() == ["stopped"]


def test_a_server_process_has_edit_file_ready_at_start_so_its_first_edit_imports_almost_nothing(
    tmp_path: Path,
) -> None:
    # A script's first edit comes at once (no warm-up before it): the server process made
    # edit_file's adapter, its operations and the write path, and its argument model, at start
    # (``Tool.at_start``); opening the state store on the first change still imports recovery.
    (tmp_path / "a.txt").write_text("retries = 3\n")
    script = (
        "import anyio, sys\n"
        "from vfs_mcp.cli import main\n"
        f"{SERVED_BY_THE_COMMAND_LINE}"
        f"main.serve([{str(tmp_path)!r}])\n"
        "anyio.run(anyio.sleep, 0)\n"  # the event loop a server process runs in, loaded
        "started = set(sys.modules)\n"
        "edit = {'path': 'a.txt', 'edits': [{'oldText': '3', 'newText': '5'}]}\n"
        "assert not anyio.run(served[0].call_tool, 'edit_file', edit).is_error\n"
        "print('first edit:', *sorted(set(sys.modules) - started))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr

    assert run.stdout.split("first edit:")[1].split() == ["vfs_mcp.changes.recovery"]
    assert (tmp_path / "a.txt").read_text() == "retries = 5\n"


WRITE_PATH_DATACLASSES = [
    "vfs_mcp.changes.confirm.Confirming",
    "vfs_mcp.changes.kept.Kept",
    "vfs_mcp.changes.state.records.Record",
    "vfs_mcp.changes.state.timeline.TimelineEntry",
    "vfs_mcp.changes.prepared.Prepared",
    "vfs_mcp.changes.prepared.Preparation",
    "vfs_mcp.changes.commit.Receipt",
    "vfs_mcp.changes.Plan",
    "vfs_mcp.ops.diff.line_matching.Matching",
    "vfs_mcp.ops.diff.unified.Diff",
    "vfs_mcp.ops.diff.unified._Span",
    "vfs_mcp.ops.text.codings.Coding",
    "vfs_mcp.ops.text.document.TextFile",
]
"""The dataclasses made when edit_file's adapter is imported after what every server imports:
CPython 3.11 compiles three to six functions for each (~1 ms; 2 when frozen), paid at a server
process's start. A frozen record (``vfs_mcp.changes.frozen``) costs ~0.05 ms."""


def test_the_edit_and_the_write_path_a_server_process_imports_at_start_make_only_these_dataclasses() -> None:
    script = (
        "import dataclasses, vfs_mcp.server.build\n"
        "made, plain = [], dataclasses.dataclass\n"
        "def counted(cls=None, /, **options):\n"
        "    def made_one(cls):\n"
        "        made.append(f'{cls.__module__}.{cls.__qualname__}')\n"
        "        return plain(cls, **options)\n"
        "    return made_one if cls is None else made_one(cls)\n"
        "dataclasses.dataclass = counted\n"
        "import vfs_mcp.profiles.default.text\n"
        "print(*made)\n"
    )
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout

    assert printed.split() == WRITE_PATH_DATACLASSES, (
        "a dataclass more on a first edit's path costs every server process's start: make it a frozen record"
    )
