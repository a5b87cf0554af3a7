"""Every code block in README.md and docs/ marked runnable is run, so the examples people copy keep
working; and every Python block is marked runnable.

The mark is in the fence's info string, after the language (renderers show only the language):

    ```python runnable
        A script: run as ``__main__`` in a fresh namespace; it passes when it raises nothing.
        Async examples call ``anyio.run(main)`` themselves.

    ```python runnable pytest [ARG ...]
        A test module: written alone into an empty folder (no conftest.py) and run by pytest
        with ARGs (e.g. ``-o asyncio_mode=auto``); it passes when pytest does, with at least one
        test passed and none skipped.

    ```console runnable
        A terminal session: each ``$ `` line is run by one bash (so ``cd`` holds) with
        ``$HOME`` an empty folder, which the expected output calls ``/home/me``, and vfs-mcp on
        the PATH; what follows a command, up to the next, is what it prints (stdout and stderr).
        A line ``...`` stands for any number of lines, ``...`` in a line for any text.

A block without ``runnable`` is a fragment and is not run. Python blocks must all be runnable.
Tracebacks name the Markdown file and line.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

INI = "[pytest]\nfilterwarnings = error\n"
if importlib.util.find_spec("pytest_asyncio"):
    INI += "asyncio_default_fixture_loop_scope = function\n"


@dataclass(frozen=True)
class Example:
    path: Path
    line: int  # of the block's first line of code
    source: str
    pytest_args: tuple[str, ...] | None  # None: a script
    language: str = "python"

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"


def examples(pages: list[Path] = PAGES) -> list[Example]:
    found = []
    for path in pages:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            words = shlex.split(match["info"])
            if len(words) < 2 or words[0] not in ("python", "console") or words[1] != "runnable":
                continue
            line = text.count("\n", 0, match.start("body")) + 1
            args = tuple(words[3:]) if words[2:3] == ["pytest"] else None
            found.append(Example(path, line, match["body"], args, words[0]))
    return found


EXAMPLES = examples()


def test_the_testing_guide_has_runnable_examples_of_both_kinds() -> None:
    guide = [e for e in EXAMPLES if e.path.name == "testing-agents.md"]

    assert any(e.pytest_args is None for e in guide)
    assert any(e.pytest_args is not None for e in guide)


def test_only_fences_marked_runnable_are_collected(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(
        "```python\nfragment\n```\n\n"
        "```python runnable\nprint('script')\n```\n\n"
        "```sh runnable\necho no\n```\n\n"
        "```python runnable pytest -o asyncio_mode=auto\ndef test_x(): pass\n```\n"
    )
    found = examples([tmp_path / "page.md"])

    assert [(e.line, e.source, e.pytest_args) for e in found] == [
        (6, "print('script')\n", None),
        (14, "def test_x(): pass\n", ("-o", "asyncio_mode=auto")),
    ]


def test_every_python_block_in_the_readme_and_docs_is_run() -> None:
    blocks = [
        f"{page.name}:{page.read_text(encoding='utf-8').count(chr(10), 0, match.start()) + 1}"
        for page in PAGES
        for match in FENCE.finditer(page.read_text(encoding="utf-8"))
        if shlex.split(match["info"])[:1] == ["python"]
    ]
    run = {f"{e.path.name}:{e.line - 1}" for e in EXAMPLES}
    assert [block for block in blocks if block not in run] == []
    assert any(e.path.name == "README.md" for e in EXAMPLES)


@pytest.mark.parametrize(
    "example", [e for e in EXAMPLES if e.language == "python" and e.pytest_args is None], ids=lambda e: e.id
)
def test_script_example_runs(example: Example) -> None:
    # Blank lines in front so that a traceback's line number is the Markdown file's.
    code = compile("\n" * (example.line - 1) + example.source, str(example.path), "exec")
    exec(code, {"__name__": "__main__", "__file__": str(example.path)})


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.pytest_args is not None], ids=lambda e: e.id)
def test_pytest_example_passes(example: Example, pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    (pytester.path / "test_example.py").write_text("\n" * (example.line - 1) + example.source, encoding="utf-8")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", *(example.pytest_args or ()))

    outcomes = result.parseoutcomes()
    assert result.ret == 0, f"{example.id} failed"
    assert outcomes.get("passed", 0) >= 1 and not outcomes.get("skipped"), outcomes


HOME = "/home/me"
"""How terminal sessions in the docs write the home folder."""


def session(source: str) -> list[tuple[str, list[str]]]:
    """A console block as (command, the lines it prints)."""
    steps: list[tuple[str, list[str]]] = []
    for line in source.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


def printed(steps: list[tuple[str, list[str]]], home: Path) -> list[list[str]]:
    """Run the commands in one bash, in ``home``; what each printed, with ``home`` written ``/home/me``."""
    mark = "\x1f-vfs-mcp-docs-"
    script = ["exec 2>&1", "status=0"]
    for number, (command, _) in enumerate(steps):
        script += [f"printf '\\n{mark}{number}\\n'", "(exit $status)", command, "status=$?"]
    scripts = os.path.dirname(sys.executable)  # vfs-mcp, as this environment installs it
    env = {"HOME": str(home), "PATH": f"{scripts}{os.pathsep}/usr/bin{os.pathsep}/bin", "NO_COLOR": "1"}
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=home, env=env, capture_output=True, text=True, timeout=600
    )
    parts = done.stdout.replace(str(home), HOME).split(f"\n{mark}")[1:]
    bodies = [part.split("\n", 1)[1].rstrip("\n") if "\n" in part else "" for part in parts]
    return [body.split("\n") if body else [] for body in bodies]


def matches(expected: list[str], got: list[str]) -> bool:
    """Whether ``got`` reads as ``expected``: a ``...`` line stands for any lines, ``...`` in a
    line for any text (a count that depends on how long the home folder's path is)."""
    lines = [ANY_LINES if line == "..." else ".*?".join(map(re.escape, line.split("..."))) for line in expected]
    pattern = "\n".join(lines).replace(f"\n{ANY_LINES}\n", f"(?:\n{ANY_LINES})?\n")
    return re.fullmatch(pattern, "\n".join(got)) is not None


ANY_LINES = "(?s:.*?)"


def test_a_console_block_reads_as_commands_and_their_output_with_elisions() -> None:
    steps = session("$ cd x\n$ ls\na\n...\nz\n$ wc -c f\n... f\n")

    assert steps == [("cd x", []), ("ls", ["a", "...", "z"]), ("wc -c f", ["... f"])]
    assert matches(["a", "...", "z"], ["a", "z"]) and matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert matches(["... f"], ["120 f"]) and not matches(["... f"], ["120 g"])
    assert not matches(["a", "z"], ["a", "b", "z"]) and not matches([], ["noise"])


@pytest.mark.slow  # each command starts vfs-mcp
@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.language == "console"], ids=lambda e: e.id)
def test_console_example_prints_what_it_shows(example: Example, tmp_path: Path) -> None:
    steps = session(example.source)
    outputs = printed(steps, tmp_path)
    assert len(outputs) == len(steps)
    for (command, expected), got in zip(steps, outputs, strict=True):
        assert matches(expected, got), f"{example.id}: $ {command}\nprinted:\n" + "\n".join(got)
