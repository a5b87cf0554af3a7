"""The test harness: a vfs-mcp server over a seeded mount and an in-process client, for testing agents.

    from vfs_mcp.testing import memory_server

    async with memory_server({"src/app.py": "print('hi')\\n"}) as client:
        result = await client.call_tool("read_file", {"path": "src/app.py"})  # an mcp.Client
        client.fs.snapshot()   # {"src/app.py": "print('hi')\\n"}: the files now, read around the tools
        client.calls           # [ToolCall(tool="read_file", arguments={...}, is_error=False, ...)]

``memory_server``, ``local_server`` and ``s3_server`` differ only in where the files live. Each
builds a mount (``memory_fs``, ``local_fs``, ``s3_fs``: a ``HarnessFS``, usable on its own) and
``connect`` serves it to a new ``VfsClient``. The pytest plugin (``vfs_mcp.pytest_plugin``) gives
the same as fixtures. The guide is docs/testing-agents.md.

Beyond that: ``Fault`` injects filesystem faults in front of the store (``faults.py``);
``client.save_calls`` and ``replay`` turn a session into a regression test, noticing the files
it read that changed since (``recording.py``, ``Version``, ``Drift``);
``client.fs.diff`` shows what changed in the tree (``trees.py``).
"""

from vfs_mcp.jail.versions import Version
from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp.testing.faults import Fault
from vfs_mcp.testing.harness import (
    Files,
    HarnessFS,
    Person,
    Seed,
    VfsClient,
    connect,
    load_dir,
    local_fs,
    local_server,
    memory_fs,
    memory_server,
    moto_s3,
    s3_fs,
    s3_server,
)
from vfs_mcp.testing.recording import (
    Difference,
    Drift,
    RecordedCall,
    Replay,
    ToolCall,
    load_calls,
    replay,
    save_calls,
)
from vfs_mcp.testing.trees import Snapshot, TreeDiff, tree_diff

__all__ = [
    "Difference",
    "Drift",
    "Fault",
    "Files",
    "HarnessFS",
    "Person",
    "RecordedCall",
    "Replay",
    "Seed",
    "Snapshot",
    "ToolCall",
    "TreeDiff",
    "Version",
    "VfsClient",
    "connect",
    "data_of",
    "error_of",
    "load_calls",
    "load_dir",
    "local_fs",
    "local_server",
    "memory_fs",
    "memory_server",
    "moto_s3",
    "replay",
    "s3_fs",
    "s3_server",
    "save_calls",
    "tree_diff",
]
