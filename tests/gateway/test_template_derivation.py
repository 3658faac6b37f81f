"""Parsers from a chat template (docs/derived-parsers.md): each real template
with a registered format is recognised as it, or derived into a format that
parses that format's cases (tests/cases and the corpus) exactly as the named
one does, one-shot, a character at a time and at seeded random splits; its
"renamed" twin (every marker replaced by a new word) is derived, not
recognised, and parses the renamed cases the same; a template that cannot
be derived says why."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from gateway.cli import main
from gateway.templates.analysis import derive
from gateway.templates.chat_template import ChatTemplate
from gateway.templates.sources import load_chat_template
from parsers import tool_format
from tests.parsers.test_conformance import parse_with as parse
from tests.parsers.test_conformance import splits
from tests.template_families import TEMPLATES, cases_for, stages

QWEN3 = "Qwen-Qwen3-0.6B.jinja"
HERMES = "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"
QWEN25 = "Qwen-Qwen2.5-7B-Instruct.jinja"
DEEPSEEK_V31 = "deepseek-ai-DeepSeek-V3.1.jinja"
R1_DISTILL = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
GLM = "zai-org-GLM-4.6.jinja"
LLAMA33 = "meta-llama-Llama-3.3-70B-Instruct.jinja"
MISTRAL_NEMO = "mistralai-Mistral-Nemo-Instruct-2407.jinja"
MISTRAL_SMALL = "mistralai-Mistral-Small-3.2-24B-Instruct-2506.jinja"
QWEN3_CODER = "Qwen-Qwen3-Coder-30B-A3B-Instruct.jinja"
KIMI_K2 = "moonshotai-Kimi-K2-Instruct.jinja"

# template -> (tool-call parser, reasoning parser) it is served by, as the model-name table pairs them
REGISTERED = {
    QWEN3: ("qwen25", "qwen3"),
    HERMES: ("qwen25", None),
    QWEN25: ("qwen25", None),
    DEEPSEEK_V31: ("deepseekv31", "deepseek-v3"),
    R1_DISTILL: ("deepseekv3", "deepseek-r1"),
    GLM: ("glm45", "glm45"),
    LLAMA33: ("llama3", None),
    MISTRAL_NEMO: ("mistral", None),
    MISTRAL_SMALL: ("mistral", None),
    QWEN3_CODER: ("qwen3_coder", None),
    KIMI_K2: ("kimi_k2", None),
}
# every marker a twin renames, and the new word for it
RENAMES = {
    "<tool_call>": "<invoke_fn>",
    "</tool_call>": "</invoke_fn>",
    "<think>": "<ponder>",
    "</think>": "</ponder>",
    "<｜tool▁calls▁begin｜>": "<｜fn▁list▁open｜>",
    "<｜tool▁calls▁end｜>": "<｜fn▁list▁close｜>",
    "<｜tool▁call▁begin｜>": "<｜fn▁open｜>",
    "<｜tool▁call▁end｜>": "<｜fn▁close｜>",
    "<｜tool▁sep｜>": "<｜fn▁args｜>",
    "<arg_key>": "<pkey>",
    "</arg_key>": "</pkey>",
    "<arg_value>": "<pval>",
    "</arg_value>": "</pval>",
    "[TOOL_CALLS]": "[FN_CALLS]",
    "<function=": "<fn=",
    "</function>": "</fn>",
    "<parameter=": "<arg=",
    "</parameter>": "</arg>",
}
TWINS = {
    QWEN3: ("qwen25", "qwen3"),
    HERMES: ("qwen25", None),
    DEEPSEEK_V31: ("deepseekv31", "deepseek-v3"),
    GLM: ("glm45", "glm45"),
    MISTRAL_NEMO: ("mistral", None),
    QWEN3_CODER: ("qwen3_coder", None),
}
# What a template does not show, so a derived format cannot know it (a
# pattern of the case text): the named formats' other spellings, end-of-turn
# tokens and what models write beyond their template.
NOT_IN_THE_TEMPLATE = {
    "qwen25": re.escape("<|endoftext|>"),
    "glm45": re.escape("\\n"),  # GLM models sometimes write a literal backslash-n between tags
    # Mistral's calls not as the JSON list Nemo's template writes, and its EOS token
    "mistral": r"\[TOOL_CALLS\](?!\s*\[)|</s>",
    "deepseekv31": "|".join(
        map(
            re.escape,
            ("<｜tool_calls_begin｜>", "<｜tool calls begin｜>", "<｜tool\\_calls\\_begin｜>", "<｜tool▁calls｜>"),
        )
    ),
}


def renamed(text: str) -> str:
    for marker, word in RENAMES.items():
        text = text.replace(marker, word)
    return text


def template(name: str, rename: bool = False) -> ChatTemplate:
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    return ChatTemplate(renamed(source) if rename else source, where=name)


def shown_by_template(case: dict, tool: str | None) -> bool:
    pattern = NOT_IN_THE_TEMPLATE.get(tool or "")
    return pattern is None or re.search(pattern, case["text"]) is None


@pytest.mark.parametrize("name", sorted(REGISTERED))
def test_a_registered_template_is_recognised_and_parses_its_cases_as_the_named_format(name: str) -> None:
    tool, reasoning = REGISTERED[name]
    found = derive(load_chat_template(TEMPLATES / name))
    assert (found.recognised_tools, found.recognised_reasoning) == (tool, reasoning), found.refusals
    assert found.origin.startswith("template: recognised as ")
    cases = cases_for(tool, reasoning)
    assert cases
    for case in cases:
        for label, pieces in splits(case).items():
            named = parse(case, pieces, case["reasoning_parser"] and reasoning, case["tool_parser"] and tool)
            assert parse(case, pieces, *stages(found, case)) == named, (case["id"], label)


def test_recognition_compares_structure_not_the_whole_file() -> None:
    source = (TEMPLATES / QWEN3).read_text(encoding="utf-8")
    edited = "{#- a fine-tune's edits -#}\n" + source.replace("# Tools", "# Tools you may use, today is 2026-11-27")
    found = derive(ChatTemplate(edited.replace("\n\n", "\n"), where="edited"))
    assert (found.recognised_tools, found.recognised_reasoning) == ("qwen25", "qwen3")


@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_renamed_twin_is_derived_and_parses_the_renamed_cases_as_the_named_format(name: str) -> None:
    tool, reasoning = TWINS[name]
    found = derive(template(name, rename=True))
    assert found.origin == "template: derived"
    assert (found.recognised_tools, found.recognised_reasoning) == (None, None)
    cases = [case for case in cases_for(tool, reasoning) if shown_by_template(case, tool)]
    assert cases
    for case in cases:
        # DeepSeek's peers drop text after the calls: their choice, which no template shows
        peer_free = tool and replace(tool_format(tool), drops_text_after_calls=False)
        named = parse(case, [case["text"]], case["reasoning_parser"] and reasoning, case["tool_parser"] and peer_free)
        want = json.loads(renamed(json.dumps(named, ensure_ascii=False)))
        twin = {**case, "text": renamed(case["text"]), "chunks": None}  # the named parse is split-invariant
        for label, pieces in splits(twin).items():
            assert parse(twin, pieces, *stages(found, case)) == want, (case["id"], label)


def test_renamed_markers_are_read_from_the_renders() -> None:
    found = derive(template(DEEPSEEK_V31, rename=True))
    assert found.tools is not None and found.reasoning is not None
    assert (found.tools.section_start, found.tools.call_start, found.tools.args_start) == (
        "<｜fn▁list▁open｜>",
        "<｜fn▁open｜>",
        "<｜fn▁args｜>",
    )
    assert (found.tools.call_end, found.tools.section_end) == ("<｜fn▁close｜>", "<｜fn▁list▁close｜>")
    assert (found.reasoning.start, found.reasoning.end, found.reasoning.switches) == (
        "<ponder>",
        "</ponder>",
        ("enable_thinking", "thinking"),
    )
    assert not found.reasoning.on_by_default


def test_a_qwen3_coder_twin_has_its_renamed_tags_read_from_the_renders() -> None:
    found = derive(template(QWEN3_CODER, rename=True))
    assert found.tools is not None and found.tools.tags is not None
    assert (found.tools.call_start, found.tools.call_end) == ("<invoke_fn>", "</fn>\n</invoke_fn>")
    tags = found.tools.tags
    assert (tags.name_prefix, tags.name_end, tags.key_open, tags.key_close, tags.value_close, tags.value_trim) == (
        "<fn=",
        ">",
        "<arg=",
        ">",
        "</arg>",
        "newline",
    )


def test_a_template_that_cannot_be_derived_says_why(capsys) -> None:
    source = (TEMPLATES / LLAMA33).read_text(encoding="utf-8")
    twice = source.replace("tool_call.arguments | tojson", "tool_call.arguments | tojson | tojson")
    llama_twin = derive(ChatTemplate(twice, where="twin", bos_token="<s>"))  # arguments as a JSON string
    assert llama_twin.tool_stage() is None
    assert "tool calls: arguments are written as tagged keys and values whose tags could not be read" in (
        llama_twin.refusals
    )
    assert main(["parsers", "--derive", str(TEMPLATES / "google-gemma-2-2b-it.jinja")]) == 0
    printed = capsys.readouterr().out
    assert "no reasoning or tool-call structure found: served as plain content" in printed
    assert "refused: the template writes no tool calls in an assistant turn" in printed


def test_parsers_derive_prints_markers_style_and_match_as_json(capsys, tmp_path) -> None:
    twin = tmp_path / "twin.jinja"
    twin.write_text(renamed((TEMPLATES / QWEN3).read_text(encoding="utf-8")), encoding="utf-8")
    assert main(["parsers", "--derive", str(twin), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["origin"] == "template: derived"
    assert report["tool_calls"]["call_start"] == "<invoke_fn>"
    assert report["tool_calls"]["style"].startswith("JSON object")
    assert report["reasoning"]["start"] == "<ponder>"
    assert main(["parsers", "--derive", str(TEMPLATES / QWEN3), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recognised"] == {
        "tool_call_parser": "qwen25",
        "reasoning_parser": "qwen3",
    }


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("{% for m in messages %}{{ m.role }}{% endfor %}", "the template does not render an assistant answer"),
        ('{{ raise_exception("no tools here") }}', "a render failed: odd: no tools here"),
        (
            "{% for m in messages %}{% if m.tool_calls %}{{ m.tool_calls[0].function.name }}{% endif %}"
            "{{ m.content }}{% endfor %}",
            "tool calls: the call's arguments are not written as JSON nor as tagged keys and values",
        ),
    ],
)
def test_an_odd_template_is_refused_with_a_reason_never_an_exception(source: str, why: str) -> None:
    found = derive(ChatTemplate(source, where="odd"))
    assert found.found_nothing
    assert why in found.refusals


# Llama 3.x's JSON call keys renamed, so no registered format reads the twin's calls
LLAMA_KEYS = {'"name": ': '"function": ', '"parameters": ': '"args": ', '"arguments": ': '"args": '}


def renamed_keys(value):
    """`value` (a case's text or its parse) with Llama's call keys renamed."""
    if isinstance(value, str):
        for key, word in LLAMA_KEYS.items():
            value = value.replace(key, word)
        return value
    if isinstance(value, dict):
        return {key: renamed_keys(item) for key, item in value.items()}
    return [renamed_keys(item) for item in value] if isinstance(value, list) else value


@pytest.mark.parametrize("name", [LLAMA33, "meta-llama-Llama-3.2-3B-Instruct.jinja"])
def test_a_llama_twin_with_renamed_keys_is_derived_and_parses_the_renamed_llama3_cases(name: str) -> None:
    source = renamed_keys((TEMPLATES / name).read_text(encoding="utf-8"))
    found = derive(ChatTemplate(source, where="twin", bos_token="<|begin_of_text|>"))
    assert found.origin == "template: derived", found.refusals
    assert found.tools is not None
    assert (found.tools.style, found.tools.name_key, found.tools.args_key) == (
        "bare JSON object {name, arguments} with no marker, as Llama 3's",
        "function",
        "args",
    )
    cases = cases_for("llama3", None)
    assert cases
    for case in cases:
        want = renamed_keys(parse(case, [case["text"]], None, "llama3"))
        twin = {**case, "text": renamed_keys(case["text"]), "chunks": None}
        for label, pieces in splits(twin).items():
            assert parse(twin, pieces, None, found.tool_stage()) == want, (case["id"], label)


# a twin writing its calls as Hermes does, and each call's id as ID
ID_WRITING = (
    "{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}"
    '<invoke_fn>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}, "id": "ID"}'
    "</invoke_fn>{% endfor %}{% else %}{{ m.content }}{% endif %}<|end|>{% endfor %}"
)


@pytest.mark.parametrize(
    ("written", "made", "said"),
    [
        ("{{ c.id }}", None, "written as given, of any shape: the surface's ids are used"),
        ("functions.{{ c.function.name }}:{{ loop.index0 }}", "functions.{name}:{n}", "written by the template"),
        (
            '{% if not c.id.startswith("call") %}{{ raise_exception("bad id") }}{% endif %}{{ c.id }}',
            None,
            "written in a shape the renders do not reveal: the surface's ids are kept",
        ),
        ("", None, "not written"),
    ],
)
def test_call_ids_the_template_writes_are_made_as_it_writes_them(written: str, made: str | None, said: str) -> None:
    found = derive(ChatTemplate(ID_WRITING.replace("ID", written), where="ids"))
    assert found.origin == "template: derived"
    assert (found.call_id_template, found.tool_stage().call_id_template) == (made, made)
    assert found.call_ids.startswith(said)
    assert not [reason for reason in found.refusals if "render failed" in reason]  # probes are not refusals


def test_a_mistral_twin_makes_nine_letter_and_digit_ids_and_says_so(capsys, tmp_path) -> None:
    found = derive(template(MISTRAL_NEMO, rename=True))
    assert (found.origin, found.call_id_template) == ("template: derived", "{random:9}")
    twin = tmp_path / "twin.jinja"
    twin.write_text(renamed((TEMPLATES / MISTRAL_NEMO).read_text(encoding="utf-8")), encoding="utf-8")
    assert main(["parsers", "--derive", str(twin)]) == 0
    assert "  call_ids: written as given, only 9 letters and digits (ids made as {random:9})" in capsys.readouterr().out
