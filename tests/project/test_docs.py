"""docs/parsers.md (and docs/peer-formats.md, for the formats only vLLM
and llama.cpp parse) documents every parser name users can configure."""

import pytest

from parsers import reasoning_parser_names, tool_call_parser_names
from tests.project import ROOT

PARSERS_DOC = "".join((ROOT / "docs" / doc).read_text(encoding="utf-8") for doc in ("parsers.md", "peer-formats.md"))


@pytest.mark.parametrize("name", sorted(set(tool_call_parser_names()) | set(reasoning_parser_names())))
def test_parsers_doc_lists_parser(name):
    assert f"`{name}`" in PARSERS_DOC


def test_readme_counts_the_parser_names():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    counts = f"{len(tool_call_parser_names())} tool-call and {len(reasoning_parser_names())} reasoning parser names"
    assert counts in readme
