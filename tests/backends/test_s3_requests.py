"""What a walk and a change cost on S3, in requests, counted as botocore sends them to moto.

A folder on S3 is a key prefix: the listing that walks it also shows it exists, so a tree,
a size or a grep costs the listing's pages (and a GET a file searched), with no HEAD and no
one-key listing to look at the folder first. Only a walk that finds nothing looks the path
up, to tell a file, a missing path and an empty folder apart.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import ObjectState
from vfs_mcp.errors import NotADirectory, NotFound
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.dialects import fs_writes, official
from vfs_mcp.ops.edits import patch
from vfs_mcp.ops.edits import replace as edit
from vfs_mcp.ops.files import transfers, write
from vfs_mcp.ops.files.listing import list_directory
from vfs_mcp.ops.search.grep import REMOTE_FETCH_CONCURRENCY, GrepQuery, grep_files
from vfs_mcp.ops.trees.analytics import calculate_directory_size
from vfs_mcp.ops.trees.directory_tree import TreeResult, directory_tree, search_files

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


# -- a bucket bigger than a page: walks that stop at their caps ------------------------------

FOLDERS, PER_FOLDER = 30, 70
"""2,100 keys (three list pages) in ``big/dNN/fNNN.txt``."""


@pytest.fixture(scope="module")
def big(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[JailedFS, Requests]:
    """One bucket for the module (uploading costs more than the tests)."""
    sandbox = make_sandbox("s3", tmp_path_factory.mktemp("big"), request)
    root = sandbox.mount.backend.root
    keys = {f"{root}/big/d{i:02d}/f{j:03d}.txt": b"x" for i in range(FOLDERS) for j in range(PER_FOLDER)}
    sandbox.mount.fs.pipe(keys)
    return sandbox.vfs(), Requests(sandbox)


def test_a_capped_tree_stops_listing_at_its_cap(big: tuple[JailedFS, Requests]) -> None:
    vfs, requests = big
    result: list[TreeResult] = []
    sent = requests.during(lambda: result.append(directory_tree(vfs, "big", max_depth=3, max_entries=50)))
    # the first flat page (most of its keys are shown: it might have been the whole tree),
    # then the root's delimiter listing (30 folders) and the first folder's (20 of its files)
    assert len(sent) == len(listings(sent)) == 3, sent
    (tree,) = result
    assert (tree.directories, tree.files, tree.truncated) == (30, 20, True)
    assert "the listing stopped there" in tree.notes[0]


def test_a_tree_one_level_deep_is_one_delimiter_listing(big: tuple[JailedFS, Requests]) -> None:
    vfs, requests = big
    sent = requests.during(lambda: directory_tree(vfs, "big", max_depth=1))
    assert len(sent) == 1 and "delimiter=%2F" in sent[0][1], sent


def test_a_name_search_stops_listing_once_it_has_its_matches(big: tuple[JailedFS, Requests]) -> None:
    vfs, requests = big
    found: list[Any] = []
    sent = requests.during(lambda: found.append(search_files(vfs, "big", "f00*", max_results=5)))
    assert len(sent) == 1 and found[0].has_more, sent
    sent = requests.during(lambda: search_files(vfs, "big", "no-such-name", max_results=5))
    assert len(sent) == len(listings(sent)) == 3, sent


def test_a_size_is_its_pages_and_nothing_else(big: tuple[JailedFS, Requests]) -> None:
    vfs, requests = big
    result: list[Any] = []
    sent = requests.during(lambda: result.append(calculate_directory_size(vfs, "big")))
    assert len(sent) == len(listings(sent)) == 3, sent
    keys = FOLDERS * PER_FOLDER
    assert (result[0].files, result[0].directories, result[0].total_bytes) == (keys, FOLDERS, keys)


def test_a_walk_whose_progress_raises_stops_listing(big: tuple[JailedFS, Requests]) -> None:
    """The server's progress callback raises when the call is cancelled: the listing stops there."""
    vfs, requests = big

    class Cancelled(Exception):
        pass

    def cancel(done: int, total: int | None, message: str) -> None:
        raise Cancelled

    for walk in (
        lambda: search_files(vfs, "big", "no-such-name", progress=cancel),
        lambda: calculate_directory_size(vfs, "big", progress=cancel),
    ):
        with pytest.raises(Cancelled):
            requests.during(walk)
        assert len(requests.sent) == 1, requests.sent
    # grep: the folder looked up (a HEAD and a one-key listing), its three pages, then only the
    # fetches already under way when the first file came back
    with pytest.raises(Cancelled):
        requests.during(lambda: grep_files(vfs, "big", GrepQuery(pattern="x"), engine="python", progress=cancel))
    assert len(requests.sent) <= 2 + 3 + REMOTE_FETCH_CONCURRENCY < FOLDERS * PER_FOLDER, len(requests.sent)


def test_list_directory_of_a_prefix_is_one_delimiter_listing(big: tuple[JailedFS, Requests]) -> None:
    vfs, requests = big
    result: list[Any] = []
    sent = requests.during(lambda: result.append(list_directory(vfs, "big/d07")))
    assert len(sent) == 1 and "delimiter=%2F" in sent[0][1], sent
    assert result[0].total == PER_FOLDER


def test_fetches_stopped_at_once_send_no_request_after_the_stop(big: tuple[JailedFS, Requests]) -> None:
    """A search that stops early (its page full, its call cancelled) has sent its last request
    when it returns: the fetches it asked for and did not take never go out later."""
    vfs, requests = big
    target = vfs.resolve("big/d01/f001.txt")
    batch = target.mount.backend.fetches()
    assert batch is not None
    requests.sent.clear()
    futures = [batch.submit(target.fs_path) for _ in range(REMOTE_FETCH_CONCURRENCY)]
    batch.stop()
    assert all(future.done() for future in futures)

    async def tasks_left() -> list[asyncio.Task[Any]]:
        return [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]

    # Nothing is left on the store's loop that could send a request later (no sleep to wait for one).
    assert asyncio.run_coroutine_threadsafe(tasks_left(), target.mount.fs.loop).result() == []


# -- what a change costs ------------------------------------------------------------------------


class Sent(Requests):
    """The requests, each with the condition it carried (``If-Match``, ``If-None-Match``)."""

    def _sent(self, request: Any, **_: Any) -> None:
        condition = next((h for h in ("If-Match", "If-None-Match") if h in request.headers), "")
        bucket_and_key = request.url.split("/", 3)[3]  # the key below the bucket: "?list-type=2..." for a listing
        self.sent.append((f"{request.method} {condition}".strip(), bucket_and_key.partition("/")[2] or bucket_and_key))


@pytest.fixture
def changing(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[JailedFS, Sent]:
    sandbox = make_sandbox("s3", tmp_path, request)
    sandbox.put("a.txt", "hello world\n")
    sandbox.put("b.txt", "one\ntwo\n")
    return sandbox.vfs(), Sent(sandbox)


def test_an_edit_on_s3_is_one_get_and_one_conditional_put(changing: tuple[JailedFS, Sent]) -> None:
    """The GET gives the ETag with the bytes; the PUT lands only if the object still has it (the
    store decides, so nothing is looked up in between); the change's record goes to the state
    store, a local folder by default."""
    vfs, sent = changing
    edits = [edit.TextEdit.model_validate({"oldText": "hello", "newText": "bye"})]
    assert sent.during(lambda: edit.edit_file(vfs, "a.txt", edits)) == [
        ("GET", "pre/a.txt"),
        ("PUT If-Match", "pre/a.txt"),
    ]


def test_a_patch_of_two_objects_on_s3_is_a_get_and_a_conditional_put_each(changing: tuple[JailedFS, Sent]) -> None:
    vfs, sent = changing
    diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-hello world\n+hi\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-one\n+1\n"
    assert sent.during(lambda: patch.apply_patch(vfs, diff)) == [
        ("GET", "pre/a.txt"),
        ("GET", "pre/b.txt"),
        ("PUT If-Match", "pre/a.txt"),
        ("PUT If-Match", "pre/b.txt"),
    ]


def test_an_append_and_a_new_file_on_s3_send_one_conditional_put(changing: tuple[JailedFS, Sent]) -> None:
    """An append reads the object once (its ETag and the bytes undo keeps); a new file is one
    create-only PUT after the lookup that tells a file from a folder."""
    vfs, sent = changing
    appended = sent.during(lambda: write.write_file(vfs, "b.txt", "three\n", append=True))
    created = sent.during(lambda: write.write_file(vfs, "c.txt", "new\n"))
    assert appended == [("HEAD", "pre/b.txt"), ("GET", "pre/b.txt"), ("PUT If-Match", "pre/b.txt")]
    assert [method for method, _ in created] == ["HEAD", "GET", "PUT If-None-Match"]


def test_a_copy_and_a_move_onto_a_new_name_on_s3_read_the_source_once(changing: tuple[JailedFS, Sent]) -> None:
    """A copy onto a new name is a create-only PUT of the source's bytes (one of two copies wins;
    CopyObject's If-None-Match is not honoured by every S3), read once even where the move keeps
    them for undo and hashes them for the record written before it starts."""
    vfs, sent = changing
    copied = sent.during(lambda: transfers.copy_file(vfs, "a.txt", "c.txt"))
    moved = sent.during(lambda: transfers.move_file(vfs, "c.txt", "d.txt"))
    assert len([m for m, path in copied if m.startswith("GET") and path == "pre/a.txt"]) == 1
    assert copied[-1] == ("PUT If-None-Match", "pre/c.txt")
    assert len([m for m, path in moved if m.startswith("GET") and path == "pre/c.txt"]) == 1
    assert moved[-2:] == [("PUT If-None-Match", "pre/d.txt"), ("DELETE", "pre/c.txt")]


def test_an_edit_whose_state_store_is_on_the_bucket_adds_two_puts_its_record_and_its_timeline_entry(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Replicas keep the change log on a shared bucket: a change of one step adds two PUTs, its
    timeline entry and then its record (a crash between leaves a line whose undo says "not in the
    undo log", never a change history does not show), each created only where nothing of that
    name is (two replicas never write one). The first change of a process reads where the
    timeline ends first."""
    sandbox = make_sandbox("s3", tmp_path, request)
    sandbox.put("a.txt", "hello world\n")
    vfs = sandbox.vfs()
    bucket = sandbox.mount.url.split("://", 1)[1].split("/", 1)[0]
    state = ObjectState(f"s3://{bucket}/state", {"endpoint_url": request.getfixturevalue("s3_endpoint")})
    changelog = log.ChangeLog(state)
    changes.attach(vfs, changelog)
    sent = Sent(sandbox)
    state.mount.fs.s3.meta.events.register("before-send.s3", sent._sent)
    call = vfs.for_call(CallContext(recording=Recording("edit_file")))
    edit.edit_file(call, "a.txt", [edit.TextEdit.model_validate({"oldText": "hello", "newText": "bye"})])
    changelog.settle()  # the first change's retention (it reads where the timeline ends) is done

    def second_edit() -> None:
        edit.edit_file(call, "a.txt", [edit.TextEdit.model_validate({"oldText": "bye", "newText": "hi"})])
        changelog.settle()  # and its own retention, which sends nothing more

    made = sent.during(second_edit)
    leases = [path for _, path in made if path.startswith("state/instances/")]  # renewed every 10 s
    assert [(method, path.rsplit("/", 1)[0]) for method, path in made if path not in leases] == [
        ("GET", "pre"),
        ("PUT If-Match", "pre"),
        ("PUT If-None-Match", "state/timeline"),
        ("PUT If-None-Match", "state/changes"),
    ]
    state.close()


def test_a_dialect_words_an_operation_without_requests_of_its_own(s3: tuple[JailedFS, Requests]) -> None:
    """The fs and reference dialects check nothing before the write path: each costs what the
    operation it words costs (the operation checks, under the lock, once)."""
    vfs, requests = s3
    plain = requests.during(lambda: write.write_file(vfs, "proj/README.md", "a\n", must_exist=True))
    worded = requests.during(lambda: fs_writes.overwrite_file(vfs, "proj/README.md", "b\n"))
    assert len(worded) == len(plain), (plain, worded)
    plain = requests.during(lambda: transfers.move_file(vfs, "proj/src/util.py", "proj/src/u2.py"))
    worded = requests.during(lambda: official.move(vfs, "proj/src/u2.py", "proj/src/util.py"))
    assert len(worded) == len(plain), (plain, worded)
    plain = requests.during(lambda: transfers.copy_file(vfs, "proj/src/util.py", "proj/u3.py", create_dirs=False))
    worded = requests.during(lambda: fs_writes.copy_path(vfs, "proj/src/util.py", "proj/u4.py", create_parents=False))
    assert len(worded) == len(plain), (plain, worded)
