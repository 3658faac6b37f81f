"""The README stays short and leads to docs/, and every relative link in
README.md and docs/*.md reaches an existing file (and heading)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.project import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md"))
README = ROOT / "README.md"
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install '.[test,speed]' && .venv/bin/python -m pytest -n logical"

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _outside_fences(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def links(text: str) -> list[str]:
    """Link targets in the prose: not in code blocks, not in code spans."""
    return [target for line in _outside_fences(text) for target in _LINK.findall(_CODE_SPAN.sub("", line))]


def anchors(text: str) -> set[str]:
    """Heading anchors as GitHub makes them: lower case, punctuation dropped,
    spaces as hyphens, a repeated heading numbered `-1`, `-2`…"""
    seen: dict[str, int] = {}
    out = set()
    for line in _outside_fences(text):
        heading = _HEADING.match(line.replace("`", ""))
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(2).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def broken(doc: Path, target: str) -> str | None:
    """Why a relative link from `doc` does not resolve, or None when it does."""
    path, _, anchor = target.partition("#")
    file = (doc.parent / path).resolve() if path else doc
    if not file.exists():
        return f"{target}: no file {file}"
    if anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
        return f"{target}: no heading #{anchor} in {file.name}"
    return None


def _relative_links() -> list[tuple[Path, str]]:
    found = []
    for doc in (README, *DOCS):
        for target in links(doc.read_text(encoding="utf-8")):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):
                found.append((doc, target))
    return found


@pytest.mark.parametrize(
    ("doc", "target"), _relative_links(), ids=lambda value: value.name if isinstance(value, Path) else value
)
def test_relative_link_resolves(doc, target):
    assert broken(doc, target) is None


def test_the_link_check_sees_a_missing_file_and_a_missing_heading(tmp_path):
    doc = tmp_path / "guide.md"
    doc.write_text("# Guide\n\n## Two words\n\n[a](#two-words) [b](#none) [c](other.md) `[d](nowhere.md)`\n")
    assert links(doc.read_text()) == ["#two-words", "#none", "other.md"]
    assert broken(doc, "#two-words") is None
    assert "no heading #none" in broken(doc, "#none")
    assert "no file" in broken(doc, "other.md")


def test_anchors_follow_github():
    text = (
        "# The API\n## tool_choice\n## Logs and tracing\n## `n` > 1\n## Logs and tracing\n```\n# not a heading\n```\n"
    )
    assert anchors(text) == {"the-api", "tool_choice", "logs-and-tracing", "n--1", "logs-and-tracing-1"}


def test_the_readme_links_every_doc():
    targets = {target.partition("#")[0] for target in links(README.read_text(encoding="utf-8"))}
    assert DOCS and {f"docs/{doc.name}" for doc in DOCS} <= targets


def test_the_readme_stays_short():
    assert len(README.read_bytes()) < 12 * 1024


def test_the_readme_keeps_the_test_command_ci_runs():
    assert f"```bash\n{TEST_COMMAND}\n```" in README.read_text(encoding="utf-8")
    run_tests = TEST_COMMAND.rpartition(" && ")[2]
    assert run_tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
