"""No source of the tests, the packages or the scripts names a path outside the repository.

A static scan, next to the run-time guard of tests/conftest.py (tests/sibling_reads.py): the
scan sees code no test happens to run; the guard sees paths the scan cannot spell out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from tests.conftest import REPO_ROOT

SCANNED = ("tests", "broker", "clients", "cluster", "metadata", "kraft", "scripts",
           "pyspark_raftka.py")
# The run-time guard names the checkout's parent: that is its job.
EXEMPT = frozenset({"tests/sibling_reads.py"})

_ROOT_NAME = r"\b\w*(?:root|ROOT|repo|REPO)\w*"
# Text that climbs out of the repository wherever it appears: (what, a word it cannot do
# without, which spares the slow search in most files, pattern).
_CLIMBING = (
    ("names a directory beside the checkout", "shared",
     re.compile(r"\.\./+shared\b|\bshared/kafka-protocol")),
    ("takes the repository root's parent", "parent",
     re.compile(_ROOT_NAME + r"(?:\(\))?\s*\.\s*parents?\b")),
    ("steps up from the repository root", "..",
     re.compile(_ROOT_NAME + r"(?:\(\))?\s*/\s*[\"']\.\.")),
    ("steps up from the working directory", "cwd()",
     re.compile(r"\bcwd\(\)\s*(?:\.\s*parents?\b|/\s*[\"']\.\.)")),
    ("starts a relative path in the parent directory", "./",
     re.compile(r"(?:^|[\"'\s=(,])\.\./", re.MULTILINE)),
    ("names the parent directory (pardir)", "pardir", re.compile(r"\bos\.pardir\b")),
)
# Steps up from the file's own place; they climb out when there are more than its depth.
_FILE_PARENTS = re.compile(
    r"Path\(\s*__file__\s*\)(?:\.(?:resolve|absolute)\(\))?((?:\.parent\b)+|\.parents\[(\d+)\])")
_FILE_DIRNAMES = re.compile(
    r"((?:os\.path\.dirname\(\s*)+)(?:os\.path\.(?:abspath|realpath)\(\s*)?__file__")
_SCRIPT_DIRNAME = re.compile(
    r"dirname\s+\"?\$(?:0|\{?BASH_SOURCE(?:\[0\])?\}?)\"?\s*\)\"?((?:/\.\.)*)")


def _levels(match: re.Match[str]) -> int:
    if match.re is _FILE_PARENTS:
        return int(match[2]) + 1 if match[2] else match[1].count(".parent")
    if match.re is _FILE_DIRNAMES:
        return match[1].count("dirname")
    return 1 + match[1].count("/..")


def climbs_out(relative: Path, text: str) -> Iterator[str]:
    """What in ``text`` (the file at ``relative`` in the repository) reaches outside it."""

    def where(match: re.Match[str]) -> str:
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        line = text[start:end if end >= 0 else len(text)]
        return f"{relative}:{text.count(chr(10), 0, match.start()) + 1}: {line.strip()}"

    for what, word, pattern in _CLIMBING:
        for match in pattern.finditer(text) if word in text else ():
            yield f"{where(match)}  <- {what}"
    for pattern in (_FILE_PARENTS, _FILE_DIRNAMES, _SCRIPT_DIRNAME):
        for match in pattern.finditer(text) if "__file__" in text or "dirname" in text else ():
            if _levels(match) > len(relative.parts):
                yield (f"{where(match)}  <- climbs {_levels(match)} levels from a file "
                       f"{len(relative.parts)} deep")


def scan(root: Path, names: tuple[str, ...] = SCANNED) -> list[str]:
    """Every place under ``names`` in ``root`` that reaches outside ``root``."""
    found: list[str] = []
    for name in names:
        top = root / name
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            relative = path.relative_to(root)
            if not path.is_file() or "__pycache__" in relative.parts or \
                    relative.as_posix() in EXEMPT:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            found.extend(climbs_out(relative, text))
    return found


def test_no_source_names_a_path_outside_the_repository() -> None:
    assert scan(REPO_ROOT) == []


UP = ".."


def test_the_scan_finds_each_way_out(tmp_path: Path) -> None:
    planted = {
        "tests/conftest.py": f'DIR = REPO_ROOT{".parent"} / "shared"\n',
        "tests/unit/reference.py": f'TEXT = open("{UP}/shared/message/A.json").read()\n',
        "tests/unit/deep.py": f"HERE = Path(__file__).resolve(){'.parent' * 4}\n",
        "tests/unit/indexed.py": f"HERE = Path(__file__){'.parents'}[3]\n",
        "tests/unit/dirnames.py": f"HERE = {'os.path.dirname(' * 4}__file__))))\n",
        "tests/unit/stepped.py": f'DATA = repo_root / "{UP}" / "data"\n',
        "tests/unit/cwd.py": f"DATA = Path.cwd(){'.parent'} / 'data'\n",
        "clients/pardir.py": f"UP = os.{'pardir'}\n",
        "scripts/tool": f'cd "$(dirname "$0")/{UP}/{UP}"\n',
        "scripts/reader": f"cat {UP}/notes/x\n",
        "metadata/records.py": f'# see {"shared"}/kafka-protocol/metadata\n',
    }
    fine = {
        "tests/conftest.py": f"REPO_ROOT = Path(__file__).resolve(){'.parent' * 2}\n",
        "tests/unit/deep.py": f"HERE = Path(__file__).resolve(){'.parents'}[2]\n",
        "scripts/tool": 'cd "$(dirname "$0")/.."\n',
        "broker/log.py": 'fsync_dir(self.directory.parent)\nif name in (".", ".."):\n',
    }
    for kind, files in (("planted", planted), ("fine", fine)):
        for name, text in files.items():
            (tmp_path / kind / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / kind / name).write_text(text)
    tops = ("tests", "clients", "metadata", "scripts", "broker")
    found = scan(tmp_path / "planted", tops)
    assert sorted({line.split(":")[0] for line in found}) == sorted(planted)
    assert scan(tmp_path / "fine", tops) == []
