"""Line reads and edits on large files, each timed beside its baseline in the same run.

Targets (README): tail of a big log ≤ 2x tail of a small one; a cold ``read_file_lines``
deep into a file ≤ 1.5x ``sed -n``, a warm one ≤ 1/20 of the cold one; ``edit_file`` ≤ 3x
``str.replace`` and a write. Timings are reported, never asserted: the ``*_ratio`` tests print
one-shot ratios (``pytest benchmarks -s``); only the memory bound is asserted.
"""

from __future__ import annotations

import subprocess
import time
import tracemalloc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.edits.replace import EditResult, TextEdit, edit_file
from vfs_mcp.ops.files.lines import LinesResult, read_file_lines, tail_file

if TYPE_CHECKING:
    from conftest import EditCase, LogFile, Scale

T = TypeVar("T")
MEMORY_BOUND = 150 * 10**6
NewVFS = Callable[[], JailedFS]


def once(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def show_ratio(label: str, ratio: float, target: float) -> None:
    print(f"\n{label}: {ratio:.3g}x (target ≤ {target:.3g}x: {'met' if ratio <= target else 'MISSED'})")


def peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_peak(label: str, fn: Callable[[], object]) -> None:
    peak = peak_bytes(fn)
    print(f"\npeak memory of {label}: {peak / 10**6:.1f} MB (bound 150 MB)")
    assert peak < MEMORY_BOUND


# -- 1. tail: the cost must not grow with the file ---------------------------------------


def tail_group(scale: Scale) -> str:
    return f"1 tail {scale.tail} lines: {scale.big_log_label} vs {scale.small_log_label} (≤ 2x)"


def check_tail(log: LogFile, scale: Scale, result: tuple[str, LinesResult]) -> None:
    text, meta = result
    assert text == log.text(log.lines - scale.tail, log.lines)
    assert meta.lines_returned == scale.tail


def test_tail_of_big_log(benchmark: Any, new_vfs: NewVFS, big_log: LogFile, scale: Scale) -> None:
    benchmark.group = tail_group(scale)
    check_tail(big_log, scale, benchmark(tail_file, new_vfs(), big_log.name, scale.tail))


def test_tail_of_small_log_baseline(benchmark: Any, new_vfs: NewVFS, small_log: LogFile, scale: Scale) -> None:
    benchmark.group = tail_group(scale)
    check_tail(small_log, scale, benchmark(tail_file, new_vfs(), small_log.name, scale.tail))


def test_tail_ratio(new_vfs: NewVFS, big_log: LogFile, small_log: LogFile, scale: Scale) -> None:
    vfs = new_vfs()
    # One untimed call of each first: a single 0.1 ms run would otherwise time first-touch costs.
    tail_file(vfs, big_log.name, scale.tail)
    tail_file(vfs, small_log.name, scale.tail)
    big, result = once(lambda: tail_file(vfs, big_log.name, scale.tail))
    check_tail(big_log, scale, result)
    small, result = once(lambda: tail_file(vfs, small_log.name, scale.tail))
    check_tail(small_log, scale, result)
    show_ratio(f"tail {scale.big_log_label} / {scale.small_log_label}", big / small, 2)


# -- 2. read_file_lines deep into a file: cold index vs sed, then warm -------------------


def lines_group(scale: Scale) -> str:
    return f"2 read_file_lines offset {scale.offset:,} of {scale.lines:,} lines (cold ≤ 1.5x sed, warm ≤ cold/20)"


def run_sed(log: LogFile, scale: Scale) -> str:
    command = ["sed", "-n", f"{scale.offset + 1},{scale.offset + scale.limit}p", str(log.host)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def expected_page(log: LogFile, scale: Scale) -> str:
    return log.text(scale.offset, scale.offset + scale.limit)


def read_page(vfs: JailedFS, log: LogFile, scale: Scale) -> str:
    return read_file_lines(vfs, log.name, scale.offset, scale.limit)[0]


def test_read_lines_cold_index(benchmark: Any, new_vfs: NewVFS, numbered_log: LogFile, scale: Scale) -> None:
    benchmark.group = lines_group(scale)
    text = benchmark.pedantic(
        read_page,
        setup=lambda: ((new_vfs(), numbered_log, scale), {}),
        rounds=scale.rounds,
        warmup_rounds=1,
    )
    assert text == expected_page(numbered_log, scale)


def test_read_lines_sed_baseline(benchmark: Any, numbered_log: LogFile, scale: Scale) -> None:
    benchmark.group = lines_group(scale)
    text = benchmark.pedantic(run_sed, args=(numbered_log, scale), rounds=scale.rounds, warmup_rounds=1)
    assert text == expected_page(numbered_log, scale)


def test_read_lines_warm_index(benchmark: Any, new_vfs: NewVFS, numbered_log: LogFile, scale: Scale) -> None:
    benchmark.group = lines_group(scale)
    vfs = new_vfs()
    read_page(vfs, numbered_log, scale)
    assert benchmark(read_page, vfs, numbered_log, scale) == expected_page(numbered_log, scale)


def test_read_lines_ratio(new_vfs: NewVFS, numbered_log: LogFile, scale: Scale) -> None:
    vfs = new_vfs()
    cold, text = once(lambda: read_page(vfs, numbered_log, scale))
    warm, warm_text = once(lambda: read_page(vfs, numbered_log, scale))
    sed, sed_text = once(lambda: run_sed(numbered_log, scale))
    assert text == warm_text == sed_text == expected_page(numbered_log, scale)
    show_ratio(f"read_file_lines cold / sed ({cold * 1e3:.1f} ms / {sed * 1e3:.1f} ms)", cold / sed, 1.5)
    show_ratio(f"read_file_lines warm / cold ({warm * 1e3:.3f} ms / {cold * 1e3:.1f} ms)", warm / cold, 1 / 20)


# -- 3. edit_file of one unique string vs str.replace and a write ------------------------


def edit_group(scale: Scale) -> str:
    return f"3 edit one unique string in {scale.edit_label} (≤ 3x str.replace)"


def run_edit_file(vfs: JailedFS, case: EditCase) -> EditResult:
    return edit_file(vfs, case.name, [TextEdit(oldText=case.old, newText=case.new)])


def replace_and_write(case: EditCase) -> None:
    text = case.host.read_bytes().decode()
    case.host.write_bytes(text.replace(case.old, case.new).encode())


def check_edited(case: EditCase) -> None:
    assert case.host.read_bytes() == case.original.replace(case.old.encode(), case.new.encode())


def restored(case: EditCase, *args: object) -> Callable[[], tuple[tuple[object, ...], dict[str, object]]]:
    def setup() -> tuple[tuple[object, ...], dict[str, object]]:
        case.restore()
        return args, {}

    return setup


def test_edit_file_one_unique_string(benchmark: Any, new_vfs: NewVFS, edit_case: EditCase, scale: Scale) -> None:
    benchmark.group = edit_group(scale)
    result = benchmark.pedantic(
        run_edit_file, setup=restored(edit_case, new_vfs(), edit_case), rounds=scale.rounds, warmup_rounds=1
    )
    assert result.changed
    check_edited(edit_case)


def test_edit_str_replace_baseline(benchmark: Any, edit_case: EditCase, scale: Scale) -> None:
    benchmark.group = edit_group(scale)
    benchmark.pedantic(replace_and_write, setup=restored(edit_case, edit_case), rounds=scale.rounds, warmup_rounds=1)
    check_edited(edit_case)


def test_edit_ratio(new_vfs: NewVFS, edit_case: EditCase, scale: Scale) -> None:
    edit_case.restore()
    ours, _ = once(lambda: run_edit_file(new_vfs(), edit_case))
    check_edited(edit_case)
    edit_case.restore()
    plain, _ = once(lambda: replace_and_write(edit_case))
    check_edited(edit_case)
    show_ratio(f"edit_file / str.replace+write ({ours * 1e3:.1f} ms / {plain * 1e3:.1f} ms)", ours / plain, 3)


# -- 4. peak memory: a bound on memory, not a timing, so it is asserted -------------------


def test_peak_memory_of_tail_of_big_log(new_vfs: NewVFS, big_log: LogFile, scale: Scale) -> None:
    vfs = new_vfs()
    check_peak(f"tail of {scale.big_log_label}", lambda: tail_file(vfs, big_log.name, scale.tail))


def test_peak_memory_of_read_lines_cold_and_warm(new_vfs: NewVFS, numbered_log: LogFile, scale: Scale) -> None:
    vfs = new_vfs()
    check_peak("read_file_lines, cold index", lambda: read_page(vfs, numbered_log, scale))
    check_peak("read_file_lines, warm index", lambda: read_page(vfs, numbered_log, scale))


def test_peak_memory_of_edit_file(new_vfs: NewVFS, edit_case: EditCase, scale: Scale) -> None:
    edit_case.restore()
    vfs = new_vfs()
    check_peak(f"edit_file of {scale.edit_label}", lambda: run_edit_file(vfs, edit_case))
    check_edited(edit_case)
