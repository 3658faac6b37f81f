"""Every place tests/markers.py marks exists, so that a renamed or moved
test does not silently lose its marker (and join README.md's quick run)."""

from __future__ import annotations

import pytest

from tests.markers import MARKED, covers, markers_of
from tests.project import ROOT

TESTS = ROOT / "tests"


@pytest.mark.parametrize("entry", sorted({entry for entries in MARKED.values() for entry in entries}))
def test_a_marked_place_exists(entry):
    path, _, name = entry.partition("::")
    assert (TESTS / path).exists(), entry
    if name:
        assert f"\ndef {name}(" in (TESTS / path).read_text(encoding="utf-8"), entry


def test_a_place_covers_its_folder_its_file_or_its_function():
    assert covers("e2e/", "e2e/test_smollm2.py", "test_x")
    assert not covers("e2e/", "gateway/e2e_test.py", "test_x")
    assert covers("gateway/test_output_fuzz.py", "gateway/test_output_fuzz.py", "test_x")
    assert not covers("gateway/test_cli.py::test_a", "gateway/test_cli.py", "test_ab")
    assert markers_of("project/test_parser_bench.py", "test_names_select_a_format_by_any_alias") == ["bench"]
