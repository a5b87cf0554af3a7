"""The XML interface: blocks of commands run in order on one server, one result each."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from vfs_mcp.cli import xml_commands
from vfs_mcp.cli.main import main
from vfs_mcp.cli.xml_commands import MAX_DEPTH, CommandResult, XmlRunner, blocks, content_of, to_xml
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    root.mkdir()
    (root / "hello.txt").write_text("hello world\n")
    (tmp_path / "secret.txt").write_text("outside the jail\n")
    return root


async def run(folder: Path, text: str, **settings: object) -> list[CommandResult]:
    server = build_server([open_mount(MountSpec(str(folder)))], Settings(**settings))  # type: ignore[arg-type]
    async with XmlRunner(server) as runner:
        return await runner.run(text)


def statuses(results: list[CommandResult]) -> list[tuple[str, int]]:
    return [(r.command, r.status) for r in results]


async def test_commands_run_in_order_with_one_working_directory(folder: Path) -> None:
    results = await run(
        folder,
        """Let me set up the notes.
        <mcp:filesystem>
            <write path="notes/todo.txt">
                buy milk
                  call Bob
            </write>
            <cd path="notes" />
            <read path="todo.txt" />
            <get_working_directory />
            <list path="." />
        </mcp:filesystem>
        and then look again:
        <mcp:filesystem><read path="todo.txt"/></mcp:filesystem>""",
    )
    assert statuses(results) == [
        ("write", 200),
        ("cd", 200),
        ("read", 200),
        ("get_working_directory", 200),
        ("list", 200),
        ("read", 200),
    ]
    assert (folder / "notes" / "todo.txt").read_text() == "buy milk\n  call Bob\n"
    assert results[2].message.startswith("buy milk\n  call Bob\n\n[")  # then a line about the file
    assert f"current_dir: {folder / 'notes'}" in results[3].message
    assert "todo.txt" in results[4].message
    assert [r.block for r in results] == [1, 1, 1, 1, 1, 2]
    assert results[5].message == results[2].message  # the second block still runs in notes/


async def test_a_block_mixing_successes_and_failures_reports_each_and_runs_on(folder: Path) -> None:
    (folder / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    (folder / "big.txt").write_text("x" * 5000)
    results = await run(
        folder,
        """<mcp:filesystem>
            <read path="missing.txt" />
            <read path="../secret.txt" />
            <head_file path="hello.txt" lines="many" />
            <move_file source="hello.txt" destination="big.txt" />
            <read path="blob.bin" />
            <read path="big.txt" />
            <read path="hello.txt" />
        </mcp:filesystem>""",
        max_read_bytes=1000,
    )
    assert [(r.status, r.code) for r in results] == [
        (404, "NOT_FOUND"),
        (403, "ACCESS_DENIED"),
        (400, "INVALID_ARGUMENT"),
        (409, "ALREADY_EXISTS"),
        (422, "BINARY_CONTENT"),
        (413, "TOO_LARGE"),
        (200, None),
    ]
    assert [r.success for r in results] == [False] * 6 + [True]
    assert results[-1].message.startswith("hello world\n")
    assert "outside the jail" not in "".join(r.message for r in results)
    assert "lines" in results[2].message


async def test_an_unknown_command_is_400_and_the_next_command_runs(folder: Path) -> None:
    results = await run(folder, '<mcp:filesystem><rm path="hello.txt"/><read path="hello.txt"/></mcp:filesystem>')
    assert statuses(results) == [("rm", 400), ("read", 200)]
    assert results[0].code == "INVALID_ARGUMENT"
    assert "unknown command <rm>" in results[0].message
    assert (folder / "hello.txt").exists()


async def test_malformed_xml_is_reported_with_its_line_and_later_blocks_still_run(folder: Path) -> None:
    text = (
        "prose\n"
        "<mcp:filesystem>\n"
        '  <read path="hello.txt">\n'
        "</mcp:filesystem>\n"
        '<mcp:filesystem><read path="hello.txt" /></mcp:filesystem>\n'
        '<mcp:filesystem><read path="hello.txt" />\n'
    )
    results = await run(folder, text)
    assert statuses(results) == [("mcp:filesystem", 400), ("read", 200), ("mcp:filesystem", 400)]
    assert results[0].message.startswith("malformed XML at line 4")
    assert "mismatched tag" in results[0].message
    assert "not closed" in results[2].message
    assert [r.block for r in results] == [1, 2, 3]


def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """What the block parser is handed from now on, counted: elements started, characters of text."""
    seen = {"elements": 0, "characters": 0}
    start, data = xml_commands._Builder.start, xml_commands._Builder.data

    def counted_start(self: Any, tag: str, attrs: dict[str, str]) -> Any:
        seen["elements"] += 1
        return start(self, tag, attrs)

    def counted_data(self: Any, text: str) -> None:
        seen["characters"] += len(text)
        data(self, text)

    monkeypatch.setattr(xml_commands._Builder, "start", counted_start)
    monkeypatch.setattr(xml_commands._Builder, "data", counted_data)
    return seen


@pytest.mark.parametrize(
    "attack",
    [
        # Billion laughs: the DTD before the block, the reference inside it.
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
        + "".join(
            f' <!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">\n' for i in range(1, 10)
        )
        + ']>\n<mcp:filesystem><write path="bomb.txt">&lol9;</write></mcp:filesystem>',
        # The DTD inside the block.
        '<mcp:filesystem><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]><write path="bomb.txt">&a;</write></mcp:filesystem>',
        # An external entity reading a file outside the jail.
        '<!DOCTYPE x [<!ENTITY xxe SYSTEM "../secret.txt">]>'
        '<mcp:filesystem><write path="bomb.txt">&xxe;</write></mcp:filesystem>',
    ],
)
async def test_entity_expansion_is_refused_before_anything_expands(
    folder: Path, attack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = counted(monkeypatch)
    results = await run(folder, attack + '\n<mcp:filesystem><read path="hello.txt"/></mcp:filesystem>')
    assert parsed["characters"] < 100, parsed  # no "lol" a billion times, nor a file's text: nothing expanded
    assert statuses(results) == [("mcp:filesystem", 400), ("read", 200)]
    assert results[0].code == "INVALID_ARGUMENT"
    assert not (folder / "bomb.txt").exists()
    assert "lol" not in results[0].message and "outside the jail" not in results[0].message


async def test_attributes_are_converted_to_the_tool_argument_types(folder: Path) -> None:
    (folder / "two.txt").write_text("1\n2\n3\n")
    (folder / ".hidden").write_text("")
    results = await run(
        folder,
        """<mcp:filesystem>
            <head_file path="two.txt" lines="2" />
            <list_directory path="." include_hidden="true" />
            <read_multiple_files paths='["hello.txt", "two.txt"]' />
            <search path="." pattern="*.txt" excludePatterns="two.txt" />
            <grep_files path="." pattern="h.l+o" is_regex="yes" />
            <edit_file path="two.txt" edits='[{"oldText": "2", "newText": "two"}]' />
        </mcp:filesystem>""",
    )
    assert [r.status for r in results] == [200] * 6, [r.message for r in results]
    assert results[0].message.startswith("1\n2\n")
    assert ".hidden" in results[1].message
    assert "hello world" in results[2].message and "3" in results[2].message
    assert "hello.txt" in results[3].message and "two.txt" not in results[3].message
    assert "hello.txt:1" in results[4].message
    assert (folder / "two.txt").read_text() == "1\ntwo\n3\n"


async def test_seed_commands_keep_seed_004_defaults_and_tool_names_keep_theirs(folder: Path) -> None:
    results = await run(
        folder,
        """<mcp:filesystem>
            <write path="deep/new/a.txt">x</write>
            <write_file path="deeper/b.txt" content="y" />
            <grep path="." pattern="HELLO" />
            <grep_files path="." pattern="HELLO" />
        </mcp:filesystem>""",
    )
    assert [r.status for r in results] == [200, 404, 200, 200]
    assert (folder / "deep" / "new" / "a.txt").read_text() == "x"
    assert "hello.txt:1" in results[2].message
    assert "hello.txt" not in results[3].message


async def test_write_takes_its_element_text_and_other_commands_refuse_text(folder: Path) -> None:
    results = await run(
        folder,
        """<mcp:filesystem>
            <write path="exact.py"><![CDATA[def f():
    return 1 < 2 & True
]]></write>
            <write path="escaped.txt">a &lt;b&gt; &amp; c</write>
            <write path="empty.txt" />
            <read path="hello.txt">please</read>
            <read path="hello.txt"><extra/></read>
        </mcp:filesystem>""",
    )
    assert [r.status for r in results] == [200, 200, 200, 400, 400]
    assert (folder / "exact.py").read_text() == "def f():\n    return 1 < 2 & True\n"
    assert (folder / "escaped.txt").read_text() == "a <b> & c"
    assert (folder / "empty.txt").read_text() == ""
    assert "takes no text" in results[3].message
    assert "child elements" in results[4].message


def test_element_text_layout() -> None:
    assert content_of("as is  ") == "as is  "
    assert content_of("\n    one\n      two\n  ") == "one\n  two\n"
    assert content_of("\n    last line kept") == "last line kept"
    assert content_of("\n") == ""


def test_blocks_are_found_only_at_their_own_tag() -> None:
    text = "<mcp:filesystems>no</mcp:filesystems> <mcp:filesystem/> <mcp:filesystem >\n<cd path='/'/></mcp:filesystem>"
    found = list(blocks(text))
    assert [len(b) for b in found if isinstance(b, ET.Element)] == [0, 1]


def test_blocks_after_non_ascii_text_are_found_whole() -> None:
    text = 'héllo ✓ <mcp:filesystem><write path="é.txt">naïve ✓</write></mcp:filesystem> ü <mcp:filesystem><cd path="/"/></mcp:filesystem>'
    first, second = blocks(text)
    assert isinstance(first, ET.Element) and isinstance(second, ET.Element)
    assert first[0].text == "naïve ✓"
    assert second[0].attrib == {"path": "/"}


def test_a_block_quoted_inside_cdata_is_content_not_a_block() -> None:
    text = (
        '<mcp:filesystem><write path="doc.md"><![CDATA[<mcp:filesystem><rm/></mcp:filesystem>]]></write>'
        "</mcp:filesystem>"
    )
    (block,) = blocks(text)
    assert isinstance(block, ET.Element)
    assert [child.tag for child in block] == ["write"]


def test_results_print_as_xml_that_parses_back() -> None:
    result = CommandResult(1, "read", 200, 'a < b & "c"\r\n\x00end', tool="read_file", path="x&y.txt")
    element = ET.fromstring(to_xml(result))
    assert element.attrib == {
        "block": "1",
        "command": "read",
        "tool": "read_file",
        "path": "x&y.txt",
        "status": "200",
        "success": "true",
    }
    assert element.text == 'a < b & "c"\r\n\ufffdend'
    failure = ET.fromstring(to_xml(CommandResult(2, "rm", 400, "unknown", code="INVALID_ARGUMENT")))
    assert failure.attrib["success"] == "false" and failure.attrib["code"] == "INVALID_ARGUMENT"


async def test_the_runner_keeps_its_working_directory_between_runs(folder: Path) -> None:
    (folder / "sub").mkdir()
    (folder / "sub" / "in.txt").write_text("inside")
    server = build_server([open_mount(MountSpec(str(folder)))])
    async with XmlRunner(server) as runner:
        await runner.run('<mcp:filesystem><cd path="sub"/></mcp:filesystem>')
        (result,) = await runner.run('<mcp:filesystem><read path="in.txt"/></mcp:filesystem>')
    assert result.message.split("\n")[0] == "inside"


def test_cli_runs_a_file_and_exits_1_when_a_command_failed(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commands = tmp_path / "commands.xml"
    commands.write_text('<mcp:filesystem><read path="hello.txt"/><read path="nope"/></mcp:filesystem>')
    code = main(["xml", str(commands), "--root", str(folder)])
    out = capsys.readouterr().out
    document = ET.fromstring(out)
    assert code == 1
    assert [r.attrib["status"] for r in document] == ["200", "404"]
    assert (document[0].text or "").startswith("hello world\n")


def test_cli_reads_stdin_and_exits_0_when_all_succeeded(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('<mcp:filesystem><list path="."/></mcp:filesystem>'))
    assert main(["xml", "--root", str(folder), "--read-only"]) == 0
    assert "hello.txt" in capsys.readouterr().out


def test_cli_usage_errors_exit_2(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["xml", str(folder / "missing.xml"), "--root", str(folder)]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["xml", str(folder / "hello.txt"), "--root", str(folder / "missing")]) == 2
    assert "cannot mount" in capsys.readouterr().err


def test_cli_with_no_block_exits_1(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("just prose"))
    assert main(["xml", "--root", str(folder)]) == 1
    captured = capsys.readouterr()
    assert ET.fromstring(captured.out).tag == "results"
    assert "no commands found" in captured.err


def test_thousands_of_unclosed_blocks_are_refused_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each used to be parsed to the end of the input: 8,000 of them ran past 30 s."""
    text = Searched("<mcp:filesystem>" * 8000)
    parsed = counted(monkeypatch)
    found = list(blocks(text))
    assert len(found) == 8000 and all(isinstance(b, Exception) for b in found)
    assert parsed["elements"] <= (MAX_DEPTH + 1) * 8000, parsed  # a few a block, not the rest of the input each
    assert text.scanned <= 4 * len(text), text.scanned  # each search for a tag goes on from the last: one pass


class Searched(str):
    """A text that counts the characters its ``find`` looks through."""

    scanned = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        at = super().find(sub, start, end)
        self.scanned += (at if at >= 0 else len(self)) - (start or 0)
        return at


def test_a_block_nested_in_a_block_is_refused_but_the_blocks_after_it_run() -> None:
    text = "<mcp:filesystem><x><mcp:filesystem><read path='a'/></mcp:filesystem></x></mcp:filesystem>"
    text += "<mcp:filesystem><read path='b'/></mcp:filesystem>"
    found = list(blocks(text))
    assert isinstance(found[0], Exception) and "nest too deep" in str(found[0])
    assert not isinstance(found[-1], Exception) and found[-1][0].get("path") == "b"


async def test_a_huge_attribute_is_refused_and_never_echoed_whole(folder: Path) -> None:
    huge = "a" * 200_000
    results = await run(folder, f'<mcp:filesystem><read path="{huge}"/></mcp:filesystem>')
    assert [(r.status, r.code) for r in results] == [(400, "INVALID_ARGUMENT")]
    assert "over the 65,536-character limit" in results[0].message
    shown = to_xml(results[0])
    assert len(shown) < 1000 and "more characters]" in shown
