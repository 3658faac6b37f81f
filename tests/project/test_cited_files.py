"""Every `*.md` file a file of the repository cites exists in the
repository: a docstring, doc or test note points at something a reader can
open (an upstream file is cited by its URL)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]

# Where a `.md` name is data, not a citation.
NOT_CITATIONS = {
    "tests/corpus/": "model outputs copied from SGLang's tests, where a file name can be a tool argument",
    "tests/clients/agents/claude/package-lock.json": "npm's lock file names the packages' own files",
    "test_docs_links.py": "the link checker's own examples of broken links",
}
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
_MD_NAME = re.compile(r"(?<![\w/.:-])((?:\.{1,2}/)*(?:[\w.-]+/)*[\w.-]+\.md)\b")


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [path for path in listed.stdout.splitlines() if (ROOT / path).is_file()]


def cited_md_files(text: str) -> list[str]:
    """The `*.md` names `text` cites, URLs left out."""
    return _MD_NAME.findall(_URL.sub(" ", text))


def exists(citation: str, citing: str, files: set[str]) -> bool:
    """A path from the repository's root or from the citing file's folder,
    or a bare file name that some file of the repository has."""
    if "/" not in citation:
        return any(PurePosixPath(path).name == citation for path in files)
    here = PurePosixPath(citing).parent
    candidates = {citation, str(here / citation)}
    return any(_normal(candidate) in files for candidate in candidates)


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part == "..":
            parts = parts[:-1]
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def test_every_cited_md_file_exists():
    files = tracked_files()
    known = set(files)
    missing = []
    for path in files:
        if any(path.startswith(prefix) or PurePosixPath(path).name == prefix for prefix in NOT_CITATIONS):
            continue
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # not text
        missing += [f"{path}: {name}" for name in cited_md_files(text) if not exists(name, path, known)]
    assert missing == []


def test_the_check_finds_a_missing_file_and_passes_urls_and_relative_paths():
    text = "see FORMATS" + ".md §1, docs/api.md, [ops](operations.md), ../README.md and https://x.org/a/NOTES.md"
    cited = cited_md_files(text)
    assert cited == ["FORMATS" + ".md", "docs/api.md", "operations.md", "../README.md"]
    files = {"docs/api.md", "docs/operations.md", "README.md"}
    assert [name for name in cited if not exists(name, "docs/index.html", files)] == ["FORMATS" + ".md"]
