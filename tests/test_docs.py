"""docs/parsers.md documents every parser name users can configure."""

from pathlib import Path

import pytest

from parsers import reasoning_parser_names, tool_call_parser_names

PARSERS_DOC = (Path(__file__).parent.parent / "docs" / "parsers.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(set(tool_call_parser_names()) | set(reasoning_parser_names())))
def test_parsers_doc_lists_parser(name):
    assert f"`{name}`" in PARSERS_DOC
