"""One clock module: `clients.clock` reads the system's wall and monotonic time in
milliseconds, and no other project source turns a reading of the system clock into
milliseconds inline (a clock that tests replace is passed in, and converting its reading
is not a second clock)."""

from __future__ import annotations

import ast
import time
from pathlib import Path

from clients.clock import monotonic_ms, wall_clock_ms
from tests.conftest import REPO_ROOT

SOURCES = ("broker", "clients", "cluster", "kraft", "metadata", "scripts", "pyspark_raftka.py")
CLOCK_MODULE = Path("clients/clock.py")
_CLOCK_READS = {"time", "time_ns", "monotonic", "monotonic_ns"}
_MS_FACTORS = {1000, 1_000_000}


def test_wall_clock_is_milliseconds_since_the_epoch() -> None:
    before = time.time_ns() // 1_000_000
    now = wall_clock_ms()
    after = time.time_ns() // 1_000_000
    assert isinstance(now, int) and before <= now <= after


def test_monotonic_clock_is_milliseconds_that_never_go_back() -> None:
    readings = [monotonic_ms() for _ in range(1000)]
    assert readings == sorted(readings)
    start_s, start_ms = time.monotonic(), monotonic_ms()
    assert abs(start_ms - start_s * 1000) < 1000


def _is_clock_read(node: ast.AST) -> bool:
    """`time.time()`, `time.monotonic_ns()`, ... or the bare name after `from time import`."""
    if not isinstance(node, ast.Call) or node.args:
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return (func.attr in _CLOCK_READS and isinstance(func.value, ast.Name)
                and func.value.id == "time")
    return isinstance(func, ast.Name) and func.id in _CLOCK_READS


def inline_clocks(source: str, filename: str = "<source>") -> list[int]:
    """Lines that scale a system clock reading to milliseconds: `time.time() * 1000`,
    `1000 * time.monotonic()`, `time.time_ns() // 1_000_000`, ..."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Mult, ast.FloorDiv,
                                                                       ast.Div)):
            continue
        for reading, factor in ((node.left, node.right), (node.right, node.left)):
            if (_is_clock_read(reading) and isinstance(factor, ast.Constant)
                    and factor.value in _MS_FACTORS):
                lines.append(node.lineno)
    return lines


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        path = REPO_ROOT / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def test_no_clock_in_milliseconds_outside_the_clock_module() -> None:
    files = _source_files()
    assert len(files) > 300
    found = {str(path.relative_to(REPO_ROOT)): lines for path in files
             if path.relative_to(REPO_ROOT) != CLOCK_MODULE
             and (lines := inline_clocks(path.read_text(), str(path)))}
    assert found == {}, "read the time through clients.clock instead"
    assert inline_clocks((REPO_ROOT / CLOCK_MODULE).read_text()), "the scan misses the clock"


def test_the_scan_finds_every_form_and_leaves_durations_and_injected_clocks() -> None:
    found = [
        "now = int(time.time() * 1000)",
        "now = 1000 * time.time()",
        "now = time.monotonic() * 1000.0",
        "now = time.time_ns() // 1_000_000",
        "now = time.monotonic_ns() / 1000000",
        "from time import time\nnow = round(time() * 1e3)",
    ]
    for source in found:
        assert inline_clocks(source), source
    left = [
        "took = (time.perf_counter() - started) * 1000",
        "now = int(self.clock() * 1000)",
        "ago = int((time.monotonic() - last) * 1000)",
        "timeout = args.timeout * 1000",
    ]
    for source in left:
        assert not inline_clocks(source), source
