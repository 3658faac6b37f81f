"""Load conformance cases and judge a parse result against them.

Cases come from SGLang's own tests (`../shared/corpus/*.jsonl`, schema in
its README) and from parsegate's own case files (`tests/cases/*.jsonl`,
same schema) for names the corpus does not cover. `$PARSEGATE_CORPUS`
names another corpus; without it and without `../shared/corpus` (a clone
on its own), the snapshot in `tests/corpus/` is used.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

TESTS = Path(__file__).parent
SHARED_CORPUS = TESTS.parent.parent / "shared" / "corpus"
SNAPSHOT_CORPUS = TESTS / "corpus"
CORPUS_DIR = Path(
    os.environ.get("PARSEGATE_CORPUS") or (SHARED_CORPUS if any(SHARED_CORPUS.glob("*.jsonl")) else SNAPSHOT_CORPUS)
)
DECLINED_FILE = TESTS / "declined.yaml"


def load_cases() -> list[dict]:
    files = sorted(CORPUS_DIR.glob("*.jsonl")) + sorted((TESTS / "cases").glob("*.jsonl"))
    if not any(CORPUS_DIR.glob("*.jsonl")):
        raise FileNotFoundError(f"no corpus at {CORPUS_DIR}; set PARSEGATE_CORPUS")
    cases = []
    for path in files:
        with path.open(encoding="utf-8") as lines:
            cases.extend(json.loads(line) for line in lines if line.strip())
    return cases


def load_declined() -> dict[str, str]:
    """Case id -> the reason parsegate deliberately differs."""
    entries = yaml.safe_load(DECLINED_FILE.read_text(encoding="utf-8")) or []
    return {case_id: entry["reason"] for entry in entries for case_id in entry["ids"]}


def strict_equal(a, b) -> bool:
    """JSON equality that tells 1 from 1.0 and True from 1."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def mismatches(case: dict, actual: dict) -> list[str]:
    """What in `actual` (the `parsegate parse` JSON shape, plus `raw_arguments`)
    disagrees with the case's expectation and checks."""
    problems = []
    expected = case["expected"]
    for field in ("content", "reasoning_content"):
        want = expected.get(field)
        if want is not None and (actual[field] or "") != want:
            problems.append(f"{field}: want {want!r}, got {actual[field]!r}")
    if expected.get("tool_calls") is not None:
        problems += _call_mismatches(expected["tool_calls"], actual)
    for check in case.get("checks") or []:
        if not _check_holds(check, actual):
            problems.append(f"check failed: {check}")
    return problems


def _call_mismatches(want_calls: list[dict], actual: dict) -> list[str]:
    calls = actual["tool_calls"]
    if len(calls) != len(want_calls):
        return [f"tool_calls: want {len(want_calls)}, got {len(calls)}: {calls}"]
    problems = []
    for i, (want, got) in enumerate(zip(want_calls, calls, strict=False)):
        raw = actual["raw_arguments"][i]
        if want.get("name") is not None and want["name"] != got["name"]:
            problems.append(f"call {i} name: want {want['name']!r}, got {got['name']!r}")
        if "arguments_streamed_prefix" in want and raw != want["arguments_streamed_prefix"]:
            problems.append(f"call {i} streamed arguments: want {want['arguments_streamed_prefix']!r}, got {raw!r}")
        if "arguments_streamed_startswith" in want and not raw.startswith(want["arguments_streamed_startswith"]):
            problems.append(
                f"call {i} streamed arguments do not start with {want['arguments_streamed_startswith']!r}: {raw!r}"
            )
        if want.get("arguments") is not None and not _arguments_match(want, got["arguments"]):
            problems.append(f"call {i} arguments: want {want['arguments']!r}, got {got['arguments']!r}")
    return problems


def _arguments_match(want: dict, got) -> bool:
    if not isinstance(got, dict):
        return False
    if want.get("arguments_partial"):
        return all(k in got and strict_equal(v, got[k]) for k, v in want["arguments"].items())
    return strict_equal(want["arguments"], got)


def _field_value(field: str, actual: dict):
    if field.startswith("tool_calls["):
        index, key = field[len("tool_calls[") :].split("].arguments.")
        calls = actual["tool_calls"]
        i = int(index)
        if i >= len(calls) or not isinstance(calls[i]["arguments"], dict):
            return None
        return calls[i]["arguments"].get(key)
    if field == "tool_calls":
        return actual["tool_calls"]
    return actual[field] or ""


def _check_holds(check: dict, actual: dict) -> bool:
    op, value = check["op"], check["value"]
    got = _field_value(check["field"], actual)
    names = [c["name"] for c in actual["tool_calls"]]
    tests = {
        "contains": lambda: got is not None and value in got,
        "not_contains": lambda: got is None or value not in got,
        "startswith": lambda: isinstance(got, str) and got.startswith(value),
        "endswith": lambda: isinstance(got, str) and got.endswith(value),
        "eq": lambda: strict_equal(got, value),
        "ne": lambda: not strict_equal(got, value),
        "stripped_eq": lambda: isinstance(got, str) and got.strip() == value.strip(),
        "count": lambda: len(names) == value,
        "min_count": lambda: len(names) >= value,
        "names": lambda: names == value,
        "contains_name": lambda: value in names,
        "not_contains_name": lambda: value not in names,
    }
    return tests[op]()
