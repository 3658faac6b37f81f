"""Which tests carry which pytest marker (registered in pyproject.toml,
set by tests/conftest.py). A place is a folder (`e2e/`), a file, or one
test function of a file (`file.py::name`, all its parameters), relative
to tests/.

`slow`: each of these took 5 s or more (`pytest --durations=40`, run on
tests/gateway, tests/parsers and tests/project on a shared, loaded 2-core
machine); tests/parsers has none. README.md's quick command leaves them
out with `e2e`, `clients` and `bench`.
"""

from __future__ import annotations

MARKED = {
    "e2e": ("e2e/",),
    "clients": ("clients/",),
    "bench": (
        "parsers/test_linearity.py",
        "project/test_card_libraries.py",
        "project/test_parser_bench.py",
        "project/test_gateway_bench.py",
    ),
    "slow": (
        "gateway/test_bad_input.py::test_malformed_tool_shapes_never_get_a_5xx",  # 148 s
        "gateway/test_cli.py::test_serve_with_workers_starts_them_all_and_answers",  # 17 s
        "gateway/test_cli.py::test_serve_runs_the_shipped_config_with_no_flags_but_port",  # 7 s
        "gateway/test_gateway_lifecycle.py",  # 10 to 16 s each
        "gateway/test_gateway_security.py::test_no_key_reaches_a_response_or_the_log",  # 10 s
        "gateway/test_metrics.py::test_calls_the_backend_parsed_itself_are_counted_with_ours",  # 11 s, 7 s
        "gateway/test_metrics.py::test_backend_parsed_reasoning_and_calls_time_the_first_token",  # 7 s
        "gateway/test_output_fuzz.py",  # 3 to 10 s each
        "gateway/test_request_logs.py::test_json_logs_give_one_object_per_request",  # 8 s
        "gateway/test_schema_fuzz.py::test_any_request_gets_an_answer_below_500",  # 3 to 5 s each
        "project/test_deployment.py::test_the_dockerfile_install_steps_give_a_working_gateway",  # 9 s
    ),
}


def covers(entry: str, place: str, function: str) -> bool:
    """Whether `entry` of MARKED names the test `function` of the file at
    `place` (relative to tests/, with `/`)."""
    path, _, name = entry.partition("::")
    if name:
        return place == path and function == name
    return place == path or (path.endswith("/") and place.startswith(path))


def markers_of(place: str, function: str) -> list[str]:
    return [marker for marker, entries in MARKED.items() if any(covers(entry, place, function) for entry in entries)]
