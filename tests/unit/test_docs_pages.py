"""The README stays short enough to read in ten minutes, and every relative link of the README
and the pages under docs/ leads to a file that exists and, with an #anchor, to a heading in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

README_MAX_LINES = 350
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.*)$")


def slug(heading: str) -> str:
    """The anchor a Git host gives a heading: lower case, punctuation dropped, spaces to
    hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown page's headings (not of `#` lines inside code blocks); a
    repeated heading gets `-1`, `-2`, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = None if in_code else HEADING.match(line)
        if match:
            anchor = slug(match.group(1))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` that lead nowhere."""
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        destination = (page.parent / path) if path else page
        if not destination.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and destination.suffix == ".md" \
                and anchor not in anchors(destination.read_text()):
            broken.append(f"{target} (no such heading)")
    return broken


def test_the_readme_is_short() -> None:
    lines = (REPO_ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines; move detail into a page under docs/")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO_ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_readme_links_every_docs_page() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for page in PAGES[1:]:
        assert f"](docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## Its part\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n```\n# not a heading\n```\n\n"
                    "[a](other.md#its-part) [b](#page) [c](https://example.org/x)\n"
                    "[d](missing.md) [e](other.md#nowhere) [f](#not-a-heading)\n")
    assert broken_links(page) == ["missing.md (no such file)", "other.md#nowhere (no such heading)",
                                  "#not-a-heading (no such heading)"]
