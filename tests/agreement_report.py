"""How many conformance cases parsegate meets, as an outside measure counts
them: a declined case (tests/declined.yaml) counts as a disagreement.

    PYTHONPATH=. python -m tests.agreement_report [--failures]

prints the share of cases met, first for the formats under SGLang's names
(docs/parsers.md), then for the formats only vLLM and llama.cpp parse
(docs/peer-formats.md, less those parsers.md names too): per case file
and per format, then in all. A case is met when its one-shot parse meets
its expectation and every split of tests/parsers/test_conformance.py
gives the same result. `--failures` adds each unmet case's id and first
problem.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from parsers import reasoning_format, tool_format
from tests.corpus import CORPUS_DIR, TESTS, load_declined, mismatches
from tests.parsers.test_conformance import RUNNABLE, parse, splits

DOCS = TESTS.parent / "docs"
SGLANG, PEERS = "SGLang's names", "formats only vLLM and llama.cpp parse"
SECTION_KINDS = {"Tool-call parsers": "tool", "Reasoning parsers": "reasoning", "llama.cpp chat formats": "mixed"}


def documented_formats(doc: Path) -> set[tuple[str, str]]:
    """("tool" | "reasoning", registered name) for each name in the first
    column of the doc's parser tables; a llama.cpp row says its kinds in
    brackets, "(tool + reasoning)" or "(reasoning)", and is a tool otherwise."""
    formats = set()
    kind = None
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            kind = SECTION_KINDS.get(heading)
        elif kind and line.startswith("| `"):
            cell = line.split(" | ")[0]
            kinds = _row_kinds(cell) if kind == "mixed" else [kind]
            for name in re.findall(r"`([^`]+)`", cell):
                for each in kinds:
                    formats.add((each, _registered(each, name)))
    return formats


def _row_kinds(cell: str) -> list[str]:
    if "(reasoning)" in cell:
        return ["reasoning"]
    return ["tool", "reasoning"] if "+ reasoning" in cell else ["tool"]


def _registered(kind: str, name: str) -> str:
    try:
        return (tool_format if kind == "tool" else reasoning_format)(name).name
    except KeyError:
        return name


def peer_only_formats() -> set[tuple[str, str]]:
    return documented_formats(DOCS / "peer-formats.md") - documented_formats(DOCS / "parsers.md")


def group_of(case: dict, peer_only: set[tuple[str, str]]) -> tuple[str, str]:
    """(SGLANG or PEERS, the case's formats as `tool+reasoning`)."""
    tool = case["tool_parser"] and tool_format(case["tool_parser"]).name
    reasoning = case["reasoning_parser"] and reasoning_format(case["reasoning_parser"]).name
    peers = ("tool", tool) in peer_only or ("reasoning", reasoning) in peer_only
    label = "+".join(name for name in (tool, reasoning) if name)
    return (PEERS if peers else SGLANG), label


def case_files() -> dict[str, str]:
    """Case id -> the file it is read from."""
    files = {}
    for path in sorted(CORPUS_DIR.glob("*.jsonl")) + sorted((TESTS / "cases").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                files[json.loads(line)["id"]] = path.name
    return files


def problems_of(case: dict, declined: dict[str, str]) -> list[str]:
    results = {label: parse(case, pieces) for label, pieces in splits(case).items()}
    one_shot = results["one-shot"]
    problems = [f"{label} differs from one-shot" for label, result in results.items() if result != one_shot]
    problems += mismatches(case, one_shot)
    if case["id"] in declined and problems:
        problems.insert(0, "declined")
    return problems


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--failures", action="store_true", help="list each unmet case and its first problem")
    show_failures = options.parse_args(argv).failures
    peer_only, declined, files = peer_only_formats(), load_declined(), case_files()
    tallies: dict[str, dict[str, dict[str, list[int]]]] = {
        group: {"file": defaultdict(lambda: [0, 0]), "format": defaultdict(lambda: [0, 0])} for group in (SGLANG, PEERS)
    }
    failures: dict[str, list[str]] = {SGLANG: [], PEERS: []}
    for case in RUNNABLE:
        group, label = group_of(case, peer_only)
        problems = problems_of(case, declined)
        for key, name in (("file", files.get(case["id"], "?")), ("format", label)):
            tally = tallies[group][key][name]
            tally[0] += not problems
            tally[1] += 1
        if problems:
            failures[group].append(f"  {case['id']}: {' / '.join(problems[:2])}")
    for group in (SGLANG, PEERS):
        print(f"== {group}")
        for key in ("file", "format"):
            for name, (met, count) in sorted(tallies[group][key].items()):
                print(f"  {key} {name:48} {met:5} of {count:5}  {_percent(met, count)}")
        met = sum(m for m, _ in tallies[group]["file"].values())
        count = sum(c for _, c in tallies[group]["file"].values())
        excused = sum(1 for line in failures[group] if ": declined / " in line)
        print(f"{group}: {met} of {count} cases met, {_percent(met, count)} ({excused} declined with a reason)")
        if show_failures:
            print("\n".join(failures[group]))
    return 0


def _percent(met: int, count: int) -> str:
    return f"{100 * met / count:.1f} %" if count else "-"


if __name__ == "__main__":
    sys.exit(main())
