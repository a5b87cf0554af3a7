"""The harness's pytest plugin, used as its users use it: its fixtures and its ``vfs`` mark, nothing else.

Nothing here comes from conftest.py. The last tests run pytest on projects of their own (no
conftest.py at all): one on anyio, one on pytest-asyncio in auto mode, and some misuses.
"""

from __future__ import annotations

import errno
import importlib.util
import sys
import textwrap
from typing import Any

import pytest

from vfs_mcp.testing import Fault

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.anyio


@pytest.mark.vfs({"src/app.py": "print('hi')\n"})
async def test_the_client_serves_the_marked_files(vfs_client: Any) -> None:
    result = await vfs_client.call_tool("read_file", {"path": "src/app.py"})

    assert result.content[0].text == "print('hi')\n"
    assert [(c.tool, c.arguments, c.is_error) for c in vfs_client.calls] == [
        ("read_file", {"path": "src/app.py"}, False)
    ]


async def test_without_a_mark_the_mount_is_empty_and_writable(vfs_client: Any) -> None:
    await vfs_client.call_tool("write_file", {"path": "made.txt", "content": "by the agent\n"})

    assert vfs_client.fs.snapshot() == {"made.txt": "by the agent\n"}


@pytest.mark.vfs({"big.txt": "0123456789"}, read_only=True, max_read_bytes=4)
async def test_the_mark_sets_read_only_and_server_options(vfs_client: Any) -> None:
    names = {tool.name for tool in (await vfs_client.list_tools()).tools}
    await vfs_client.call_tool("read_file", {"path": "big.txt"})

    assert "write_file" not in names
    assert vfs_client.calls[-1].code == "TOO_LARGE"


@pytest.mark.vfs({"build/a.o": "object\n", "src/app.py": "print('hi')\n"})
async def test_an_agent_survives_the_person_declining(vfs_client: Any, vfs_person: Any) -> None:
    declined = await vfs_client.call_tool("delete_path", {"path": "build", "recursive": True})
    edited = await vfs_client.call_tool(
        "edit_file", {"path": "src/app.py", "edits": [{"oldText": "hi", "newText": "hello"}]}
    )

    assert vfs_client.calls[0].code == "DECLINED" and declined.is_error
    assert not edited.is_error  # an edit destroys nothing: nobody is asked
    assert len(vfs_person.asked) == 1 and "delete the folder" in vfs_person.asked[0]
    assert vfs_client.fs.snapshot() == {"build/a.o": "object\n", "src/app.py": "print('hello')\n"}


@pytest.mark.vfs({"build/a.o": "object\n"})
async def test_the_person_may_accept(vfs_client: Any, vfs_person: Any) -> None:
    vfs_person.answer = "accept"
    result = await vfs_client.call_tool("delete_path", {"path": "build", "recursive": True})

    assert not result.is_error
    assert vfs_client.fs.snapshot() == {}
    assert len(vfs_person.asked) == 1


@pytest.mark.vfs({"a.txt": "x"}, confirm="writes")
async def test_the_mark_sets_the_policy_the_person_is_asked_under(vfs_client: Any, vfs_person: Any) -> None:
    await vfs_client.call_tool("write_file", {"path": "b.txt", "content": "new\n"})

    assert vfs_client.calls[-1].code == "DECLINED"
    assert vfs_client.fs.snapshot() == {"a.txt": "x"}


@pytest.mark.vfs({"a.txt": "x"})
def test_vfs_fs_works_in_a_plain_test_and_ignores_read_only(vfs_fs: Any) -> None:
    vfs_fs.write("b/c.txt", "y")

    assert vfs_fs.snapshot() == {"a.txt": "x", "b/c.txt": "y"}
    assert vfs_fs.root.startswith("memory://")


@pytest.mark.vfs({"a.txt": "x"})
async def test_the_client_serves_the_same_mount_as_vfs_fs(vfs_fs: Any, vfs_client: Any) -> None:
    vfs_fs.write("late.txt", "written after the server started")
    result = await vfs_client.call_tool("read_file", {"path": "late.txt"})

    assert vfs_client.fs is vfs_fs
    assert not result.is_error


@pytest.mark.vfs({"shared.txt": "module"}, read_only=True)
class TestMarksMergeClosestFirst:
    @pytest.mark.vfs({"own.txt": "method"})
    async def test_the_method_mark_wins_for_files_the_class_mark_still_sets_read_only(self, vfs_client: Any) -> None:
        names = {tool.name for tool in (await vfs_client.list_tools()).tools}

        assert vfs_client.fs.snapshot() == {"own.txt": "method"}
        assert "write_file" not in names


class TestFixturesCanBeOverridden:
    @pytest.fixture
    def vfs_files(self) -> dict[str, str]:
        return {"from_fixture.txt": "overridden"}

    async def test_an_overridden_vfs_files_seeds_the_mount(self, vfs_client: Any) -> None:
        result = await vfs_client.call_tool("read_file", {"path": "from_fixture.txt"})

        assert result.content[0].text == "overridden"

    @pytest.mark.vfs({"from_mark.txt": "marked"})
    async def test_a_mark_beats_the_fixture(self, vfs_client: Any) -> None:
        assert vfs_client.fs.snapshot() == {"from_mark.txt": "marked"}


@pytest.mark.parametrize("vfs_files", [{"n.txt": "1"}, {"n.txt": "2"}])
async def test_vfs_files_can_be_parametrized(vfs_client: Any, vfs_files: dict[str, str]) -> None:
    result = await vfs_client.call_tool("read_file", {"path": "n.txt"})

    assert result.content[0].text == vfs_files["n.txt"]


@pytest.mark.parametrize("vfs_backend", ["memory", "local", "s3"])
@pytest.mark.vfs({"src/app.py": "pritn('hi')\n", "README.md": "# demo\n"})
async def test_the_same_test_runs_on_every_backend(vfs_client: Any, vfs_backend: str) -> None:
    await vfs_client.call_tool("edit_file", {"path": "src/app.py", "edits": [{"oldText": "pritn", "newText": "print"}]})
    await vfs_client.call_tool("read_file", {"path": "missing.txt"})

    assert vfs_client.fs.snapshot() == {"README.md": "# demo\n", "src/app.py": "print('hi')\n"}
    assert [c.code for c in vfs_client.calls] == [None, "NOT_FOUND"]
    assert vfs_client.fs.root.startswith({"memory": "memory://", "local": "/", "s3": "s3://"}[vfs_backend])


@pytest.mark.vfs({"a.txt": "a\n"}, faults=[Fault.on("write", "*.txt", errno.ENOSPC)])
async def test_the_mark_puts_faults_in_front_of_the_served_store(vfs_client: Any) -> None:
    result = await vfs_client.call_tool("write_file", {"path": "a.txt", "content": "b\n"})

    assert result.is_error and "no space left" in result.content[0].text
    vfs_client.fs.write("b.txt", "written around the faults\n")
    assert vfs_client.fs.snapshot() == {"a.txt": "a\n", "b.txt": "written around the faults\n"}


# -- pytest on projects of their own -----------------------------------------------------------------

INI = "[pytest]\nfilterwarnings = error\n"
if importlib.util.find_spec("pytest_asyncio"):
    INI += "asyncio_default_fixture_loop_scope = function\n"

USER_TESTS = """
import pytest

pytestmark = pytest.mark.{mark}


@pytest.mark.vfs({{"notes.txt": "one\\n"}})
async def test_an_agent_appends_a_line(vfs_client):
    await vfs_client.call_tool("write_file", {{"path": "notes.txt", "content": "two\\n", "append": True}})
    assert vfs_client.fs.snapshot() == {{"notes.txt": "one\\ntwo\\n"}}
    assert [call.tool for call in vfs_client.calls] == ["write_file"]


async def test_two_clients_never_share_files(vfs_client):
    assert vfs_client.fs.snapshot() == {{}}
"""


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini(INI)
    pytester.makepyfile(test_user=textwrap.dedent(source))
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


def test_the_plugin_is_registered_through_its_entry_point(pytester: pytest.Pytester) -> None:
    result = run(pytester, "def test_nothing(): pass", "--markers")

    assert result.ret == 0
    result.stdout.fnmatch_lines(["@pytest.mark.vfs(files=None, *, profile='default', backend='memory'*"])


def test_a_project_without_conftest_uses_the_fixtures_on_anyio(pytester: pytest.Pytester) -> None:
    run(pytester, USER_TESTS.format(mark="anyio")).assert_outcomes(passed=2)


def test_a_project_on_pytest_asyncio_auto_mode_uses_the_fixtures(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")
    result = run(pytester, USER_TESTS.format(mark="asyncio"), "-o", "asyncio_mode=auto")

    result.assert_outcomes(passed=2)


def test_misuse_fails_with_a_message(pytester: pytest.Pytester) -> None:
    source = """
    import pytest

    @pytest.mark.vfs({"a": "b"}, {"c": "d"})
    def test_two_file_sets(vfs_fs):
        pass

    @pytest.mark.vfs(backend="ftp")
    def test_unknown_backend(vfs_fs):
        pass

    @pytest.mark.vfs(max_read_bites=3)
    @pytest.mark.anyio
    async def test_unknown_option(vfs_client):
        pass
    """
    result = run(pytester, source)

    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "*the vfs mark takes one positional argument (files) and keyword options*",
            "*unknown vfs backend 'ftp'; choose one of memory, local, s3*",
            "*unknown server option max_read_bites*",
        ]
    )


def test_a_failed_snapshot_comparison_shows_the_tree_diff(pytester: pytest.Pytester) -> None:
    source = """
    import pytest

    @pytest.mark.anyio
    @pytest.mark.vfs({"notes.md": "one\\ntwo\\n", "old.txt": "x"})
    async def test_agent(vfs_client):
        await vfs_client.call_tool("edit_file", {"path": "notes.md", "edits": [{"oldText": "two", "newText": "2"}]})
        await vfs_client.call_tool("write_file", {"path": "extra.txt", "content": "hi"})
        assert vfs_client.fs.snapshot() == {"notes.md": "one\\ntwo\\n", "old.txt": "x"}
    """
    result = run(pytester, source)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the snapshot differs from what was expected (+ only in the snapshot, - only expected):",
            "*+ extra.txt (2 bytes)",
            "*~ notes.md (8 bytes -> 6 bytes)",
            "*    -two",
            "*    +2",
        ]
    )


@pytest.mark.slow  # moto's server, and pytest in a process of its own: a user's logging is set up fresh
def test_a_users_test_output_holds_their_logs_not_the_harness_s_expected_errors_or_moto_s_requests(
    pytester: pytest.Pytester,
) -> None:
    source = """
    import logging

    import pytest

    from vfs_mcp.testing import memory_server, moto_s3, s3_server


    @pytest.mark.anyio
    async def test_agent():
        logging.getLogger("agent").info("the agent's own step")
        async with memory_server({"a.txt": "x"}) as client:
            assert (await client.call_tool("read_file", {"path": "missing.txt"})).is_error
        with moto_s3() as endpoint:
            async with s3_server({"a.txt": "x"}, bucket="quiet-bucket", endpoint_url=endpoint) as client:
                assert (await client.call_tool("read_file", {"path": "missing.txt"})).is_error
    """
    pytester.makeini(INI + "log_level = INFO\n")
    pytester.makepyfile(test_user=textwrap.dedent(source))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rP")  # -rP: the output of passed tests too

    result.assert_outcomes(passed=1)
    shown = result.stdout.str()
    assert "the agent's own step" in shown
    assert "read_file failed" not in shown and "werkzeug" not in shown and "HTTP/1.1" not in shown


PARSING_BESIDE_THE_SERVER = """
import ast
import pathlib
import time

import pytest
from mcp import Client

from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.server.build import build_server
from vfs_mcp.testing import memory_server

pytestmark = pytest.mark.anyio


class Pause:
    # Cyclic garbage whose finalizer lets other threads run: the collector frees it in the middle
    # of whatever allocates, here the parser (asyncio's and anyio's objects do the same).
    def __init__(self):
        self.me = self

    def __del__(self):
        time.sleep(0.0001)


def parse_a_while():
    # What pytest's assertion rewriting (and hypothesis's plugin, importing at teardown) do on this thread.
    source = pathlib.Path(ast.__file__).read_text()
    for _ in range(40):
        for _ in range(200):
            Pause()
        ast.parse(source)


@pytest.mark.vfs({"a.txt": "hi"})
async def test_the_fixture(vfs_client):
    assert (await vfs_client.call_tool("read_file", {"path": "a.txt"})).content[0].text == "hi"
    parse_a_while()


async def test_memory_server():
    async with memory_server({"a.txt": "hi"}) as client:
        assert not (await client.call_tool("read_file", {"path": "a.txt"})).is_error
    parse_a_while()


async def test_an_in_process_client():
    async with Client(build_server([open_mount(MountSpec("memory://in-process"))])) as client:
        assert (await client.list_tools()).tools
    parse_a_while()
"""


@pytest.mark.slow  # pytest in a process of its own, every module compiled from source
def test_tests_using_an_in_process_server_pass_while_their_thread_parses_python(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CPython before 3.11.8 / 3.12.2 counts AST recursion per interpreter: a server thread importing
    # (parsing, under pytest's assertion rewriting) while the test's thread parses made pytest exit 1
    # with "SystemError: AST constructor recursion depth mismatch". No compiled module cached: each
    # import parses, as in a fresh checkout.
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(pytester.path / "pycache"))
    pytester.makeini(INI)  # warnings are errors: an exception in a thread fails the run
    pytester.makepyfile(test_user=PARSING_BESIDE_THE_SERVER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    assert "SystemError" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=3)


def test_without_moto_moto_s3_names_the_extra_that_brings_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from vfs_mcp.testing import moto_s3

    monkeypatch.setitem(sys.modules, "moto.server", None)  # as if moto were not installed
    with pytest.raises(RuntimeError) as missing, moto_s3():
        pass
    assert "pip install ./backends '.[s3-test]'" in str(missing.value) and "moto[server]" not in str(missing.value)
