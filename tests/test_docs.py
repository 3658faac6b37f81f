"""The README (and docs/peer-formats.md, for the peers' formats) documents
every parser name users can configure."""

from pathlib import Path

import pytest

from parsers import reasoning_parser_names, tool_call_parser_names

README = "".join(
    (Path(__file__).parent.parent / doc).read_text(encoding="utf-8") for doc in ("README.md", "docs/peer-formats.md")
)


@pytest.mark.parametrize("name", sorted(set(tool_call_parser_names()) | set(reasoning_parser_names())))
def test_readme_lists_parser(name):
    assert f"`{name}`" in README
