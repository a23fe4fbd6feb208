"""The bash scripts stay thin: the Python they run lives in modules under scripts/ (which
linters read and tests import), never in a here-document or a `python -c` program of more
than a couple of lines; and every one of those modules imports."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from tests.conftest import REPO_ROOT

# The most lines of Python a script may hand an interpreter inline (a one-line check).
MAX_INLINE_LINES = 2
# Scripts that may still embed Python, and why. An entry that no longer applies fails
# test_every_exemption_still_applies, so it goes with the move it waits for.
EXEMPT: dict[str, str] = {}

_PYTHON = re.compile(r"\bpython[0-9.]*\b")
_ASSIGNMENT = re.compile(r"^[ \t]*(?:local[ \t]+|export[ \t]+|readonly[ \t]+)?"
                         r"([A-Za-z_]\w*)=(.*)$", re.MULTILINE)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([A-Za-z_]\w*)\2")
_INLINE = re.compile(r"(?<![\w-])-c[ \t]+(?:'([^']*)'|\"((?:[^\"\\]|\\.)*)\")", re.DOTALL)


def bash_scripts(root: Path) -> list[Path]:
    """The shell scripts under `root`/scripts: a `#!` line naming a shell, or a `.sh` name."""
    found = []
    for path in sorted((root / "scripts").rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".py":
            continue
        with path.open("rb") as file:
            first = file.readline()
        if path.suffix == ".sh" or (first.startswith(b"#!") and b"sh" in first):
            found.append(path)
    return found


def embedded_python(text: str) -> Iterator[tuple[int, int]]:
    """(line number, lines of Python) of each program that the bash script `text` hands a
    Python interpreter inline: a here-document fed to it, or the argument of its `-c`. The
    interpreter is named outright (`python3`, `.venv/bin/python`) or through a variable that
    holds such a path (`"$py"`)."""
    names = {match[1] for match in _ASSIGNMENT.finditer(text) if _PYTHON.search(match[2])}
    interpreter = re.compile("|".join([_PYTHON.pattern, *(rf"\$\{{?{re.escape(name)}\b"
                                                          for name in sorted(names))]))
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        first = i
        command = lines[i]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i]
        i += 1
        for match in _HEREDOC.finditer(command):  # every body is skipped, not read as code
            body = 0
            while i < len(lines) and (lines[i].lstrip("\t") if match[1] else lines[i]) \
                    != match[3]:
                body += 1
                i += 1
            i += 1
            if interpreter.search(command):
                yield first + 1, body
    for match in _INLINE.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if interpreter.search(text, line_start, match.start()):
            program = match[1] if match[1] is not None else match[2]
            yield text.count("\n", 0, match.start()) + 1, program.count("\n") + 1


def too_long(root: Path) -> list[str]:
    """Every inline program longer than MAX_INLINE_LINES in the scripts under `root`."""
    found = []
    for path in bash_scripts(root):
        relative = path.relative_to(root).as_posix()
        for line, length in embedded_python(path.read_text(encoding="utf-8")):
            if length > MAX_INLINE_LINES and relative not in EXEMPT:
                found.append(f"{relative}:{line}: {length} lines of Python inline")
    return found


def test_no_script_embeds_more_than_a_line_or_two_of_python() -> None:
    assert bash_scripts(REPO_ROOT), "no scripts found"
    assert too_long(REPO_ROOT) == []


def test_every_exemption_still_applies() -> None:
    for name in EXEMPT:
        text = (REPO_ROOT / name).read_text(encoding="utf-8")
        assert any(length > MAX_INLINE_LINES for _, length in embedded_python(text)), \
            f"{name} no longer embeds Python: drop its exemption"


def test_the_scan_finds_each_way_of_embedding_python(tmp_path: Path) -> None:
    heredoc = "print(1)\nprint(2)\nprint(3)\n"
    planted = {
        "scripts/direct": f"#!/usr/bin/env bash\nexec .venv/bin/python - \"$@\" <<'PY'\n"
                          f"{heredoc}PY\n",
        "scripts/variable": f"#!/bin/bash\npy=\"$root/.venv/bin/python\"\n"
                            f"\"$py\" - a b <<PYTHON\n{heredoc}PYTHON\n",
        "scripts/continued": f"#!/usr/bin/env bash\npython3 - \"$@\" 2> >(grep -v x \\\n"
                             f"    >&2) <<-'PY'\n{heredoc}\tPY\n",
        "scripts/inline": "#!/usr/bin/env bash\nrate() {\n    \"${py}\" -c 'import sys\n"
                          "a = 1\nprint(a)' \"$@\"\n}\npy=.venv/bin/python\n",
        "scripts/lib/helpers.sh": "python3 -c \"import sys\nx = \\\"a\\\"\nprint(x)\"\n",
    }
    fine = {
        "scripts/wrapper": "#!/usr/bin/env bash\nset -euo pipefail\nroot=x\n"
                           "exec \"$root/.venv/bin/python\" -m scripts.benchmarks.bench \"$@\"\n",
        "scripts/check": "#!/usr/bin/env bash\n.venv/bin/python -c \"import matplotlib\"\n"
                         "python3 -c 'import sys\nprint(sys.argv)' x\n",
        "scripts/usage": "#!/usr/bin/env bash\ncat <<EOF\nusage: a\nb\nc\nd\nEOF\n"
                         "grep -c 'a\nb\nc' f\npython3 -m x <<< \"$(printf 'a\\nb\\nc')\"\n",
        "scripts/tool.py": f"import sys\n{heredoc * 3}",
    }
    for kind, files in (("planted", planted), ("fine", fine)):
        for name, text in files.items():
            (tmp_path / kind / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / kind / name).write_text(text)
    found = too_long(tmp_path / "planted")
    assert sorted(line.split(":")[0] for line in found) == sorted(planted)
    assert all(line.endswith(": 3 lines of Python inline") for line in found), found
    assert too_long(tmp_path / "fine") == []


_IMPORT_ALL = """
import importlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
names = sorted(".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
               for p in (root / "scripts").rglob("*.py") if "__pycache__" not in p.parts)
failures = []
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failures.append(f"{name}: {exc!r}")
print(len(names))
print("\\n".join(failures))
"""


def test_every_module_under_scripts_imports() -> None:
    result = subprocess.run([sys.executable, "-c", _IMPORT_ALL, str(REPO_ROOT)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    count, *failures = result.stdout.splitlines()
    assert int(count) > 10
    assert not [f for f in failures if f], "\n".join(failures)
