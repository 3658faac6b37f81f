"""The README documents every parser name users can configure."""

from pathlib import Path

import pytest

from parsers import reasoning_parser_names, tool_call_parser_names

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(set(tool_call_parser_names()) | set(reasoning_parser_names())))
def test_readme_lists_parser(name):
    assert f"`{name}`" in README
