"""docs/architecture.md's layout tables name every module of the two
packages, each in its folder's row, and no module that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "architecture.md"
ROW = re.compile(r"^\| `(?P<folder>[\w/]+)/`(?: top)? \|")
FOLDERS = [
    "parsers",
    "parsers/core",
    "parsers/stages",
    "parsers/grammars",
    "parsers/formats",
    "gateway",
    "gateway/api",
    "gateway/upstream",
    "gateway/templates",
    "gateway/plan",
    "gateway/ops",
]


def layout_rows() -> dict[str, set[str]]:
    """Each folder the tables describe, with the `*.py` names its row gives."""
    rows: dict[str, set[str]] = {}
    for line in ARCHITECTURE.read_text().splitlines():
        found = ROW.match(line)
        if found:
            rows[found["folder"]] = set(re.findall(r"`([\w/]+\.py)`", line))
    return rows


def modules_of(folder: str) -> set[str]:
    """The modules whose nearest folder with a row is `folder` (so those of
    `gateway/ops/store/` are `gateway/ops`'s), by bare name; `__init__.py`
    aside."""
    return {
        file.name for file in (REPO / folder).rglob("*.py") if file.name != "__init__.py" and _row_of(file) == folder
    }


def _row_of(file: Path) -> str:
    return next(parent for parent in (p.relative_to(REPO).as_posix() for p in file.parents) if parent in FOLDERS)


def test_the_tables_describe_every_folder_of_code() -> None:
    assert sorted(layout_rows()) == sorted(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_folder_s_row_names_exactly_its_modules(folder: str) -> None:
    named = layout_rows()[folder]
    bare = {name for name in named if "/" not in name} - {"__init__.py"}  # a package's face, where the row says so
    assert sorted(modules_of(folder) - bare) == [], "modules the page does not name"
    assert sorted(bare - modules_of(folder)) == [], "names of no module in the folder"
    package = REPO / folder.split("/")[0]
    elsewhere = [name for name in named if "/" in name and not list(package.rglob(name))]
    assert elsewhere == [], "paths of no module"
