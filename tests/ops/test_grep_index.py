"""The content index of object-store mounts: grep answers as a full scan does, reading less."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.search import index
from vfs_mcp.ops.search.grep import GrepQuery, grep_files

pytestmark = pytest.mark.slow


class Gets:
    """The GET requests of objects one mount's S3 client sends."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sent: list[tuple[str, str]] = []
        fs: Any = sandbox.mount.fs
        fs.connect()
        fs.s3.meta.events.register("before-send.s3", self._sent)

    def _sent(self, request: Any, **_: Any) -> None:
        self.sent.append((request.method, request.url.split("/", 3)[3]))

    def objects(self) -> list[str]:
        return [path for method, path in self.sent if method == "GET" and "list-type" not in path]


@pytest.fixture
def s3(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return make_sandbox("s3", tmp_path, request)


def grep(vfs: JailedFS, pattern: str, **options: Any) -> Any:
    use_index = options.pop("use_index", True)
    return grep_files(vfs, ".", GrepQuery(pattern, **options), use_index=use_index)


def test_a_second_grep_reads_only_the_objects_that_may_match(s3: Sandbox) -> None:
    for i in range(20):
        s3.put(f"src/m{i}.py", f"def f{i}():\n    return {i}\n" + ("needle here\n" if i == 7 else ""))
    vfs = s3.vfs()
    gets = Gets(s3)
    first = grep(vfs, "needle")
    assert index.settle(vfs)
    assert len(gets.objects()) == 20
    gets.sent.clear()
    second = grep(vfs, "needle")
    assert second == first and [m.path for m in second.matches] == [s3.path("src/m7.py")]
    assert (
        gets.objects() == ["bucket" + s3.path("src/m7.py").split("bucket", 1)[1].split("/", 1)[0] + "/pre/src/m7.py"]
        or len(gets.objects()) == 1
    )
