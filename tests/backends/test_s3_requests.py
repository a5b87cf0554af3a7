"""What a walk costs on S3, in requests, counted as botocore sends them to moto.

A folder on S3 is a key prefix: the listing that walks it also shows it exists, so a tree,
a size or a grep costs the listing's pages (and a GET a file searched), with no HEAD and no
one-key listing to look at the folder first. Only a walk that finds nothing looks the path
up, to tell a file, a missing path and an empty folder apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox

from vfs_mcp.errors import NotADirectory, NotFound
from vfs_mcp.filesystem import JailedFS
from vfs_mcp.ops import write
from vfs_mcp.ops.analytics import calculate_directory_size
from vfs_mcp.ops.grep import GrepQuery, grep_files
from vfs_mcp.ops.tree import directory_tree, search_files

pytestmark = pytest.mark.slow

FILES = {"proj/README.md": "# proj\n", "proj/src/main.py": "def main():\n    pass\n", "proj/src/util.py": "x = 1\n"}


class Requests:
    """The requests one mount's S3 client sends, as (method, path and query)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sent: list[tuple[str, str]] = []
        fs: Any = sandbox.mount.fs
        fs.connect()
        fs.s3.meta.events.register("before-send.s3", self._sent)

    def _sent(self, request: Any, **_: Any) -> None:
        self.sent.append((request.method, request.url.split("/", 3)[3]))

    def during(self, action: Any) -> list[tuple[str, str]]:
        self.sent.clear()
        action()
        return list(self.sent)


@pytest.fixture
def s3(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[JailedFS, Requests]:
    sandbox = make_sandbox("s3", tmp_path, request)
    for rel, text in FILES.items():
        sandbox.put(rel, text)
    return sandbox.vfs(), Requests(sandbox)


def listings(sent: list[tuple[str, str]]) -> list[str]:
    return [query for method, query in sent if method == "GET" and "?list-type=2" in query]


@pytest.mark.parametrize("path", ["proj", "."])
def test_a_tree_of_a_folder_costs_one_listing_and_nothing_else(s3: tuple[JailedFS, Requests], path: str) -> None:
    vfs, requests = s3
    sent = requests.during(lambda: directory_tree(vfs, path, max_depth=10))
    assert len(sent) == len(listings(sent)) == 1, sent


def test_a_size_and_a_name_search_cost_one_listing(s3: tuple[JailedFS, Requests]) -> None:
    vfs, requests = s3
    assert len(requests.during(lambda: calculate_directory_size(vfs, "proj"))) == 1
    assert len(requests.during(lambda: search_files(vfs, "proj", "*.py"))) == 1


def test_a_grep_of_the_mount_costs_one_listing_and_a_get_a_file(s3: tuple[JailedFS, Requests]) -> None:
    vfs, requests = s3
    sent = requests.during(lambda: grep_files(vfs, ".", GrepQuery(pattern="main"), engine="python"))
    fetched = [query for method, query in sent if method == "GET" and "?list-type" not in query]
    assert (len(listings(sent)), len(fetched), len(sent)) == (1, len(FILES), 1 + len(FILES)), sent


def test_a_walk_that_finds_nothing_still_tells_a_file_a_missing_path_and_an_empty_folder_apart(
    s3: tuple[JailedFS, Requests],
) -> None:
    vfs, _ = s3
    write.create_directory(vfs, "empty")
    assert directory_tree(vfs, "empty").files == 0
    with pytest.raises(NotADirectory):
        directory_tree(vfs, "proj/README.md")
    with pytest.raises(NotFound):
        directory_tree(vfs, "nowhere")
    with pytest.raises(NotFound):
        calculate_directory_size(vfs, "nowhere")
