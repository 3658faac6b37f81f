"""Parsers from a chat template, by differential rendering (docs/derived-parsers.md).

The template is rendered for pairs of synthetic conversations that differ
in one thing (an answer against a call, one call against two, reasoning
present or absent, a thinking switch on or off), with sentinel values, and
the markers are read from where the renders differ, as llama.cpp's
autoparser does (`common/chat-diff-analyzer.cpp`). Then:

0. **recognise the family**: markers only one family writes, in the
   template's text or its special tokens (`recognition.py`), name its
   parsers; its tool-call parser serves the model if it reads the
   template's own renders of calls back, or if the template writes no
   calls (LFM2.5) or renders none;
1. **recognise** a format: a registered tool-call format whose own rendering of the
   sample call has the template's markers (whitespace aside) and that
   reads the template's renders back to the same calls serves the model;
   a registered reasoning format with the same markers and switches too;
2. **derive** otherwise: the markers become a format
   (`parsers.formats.derived`), kept only if it reads the template's own
   renders back to the same calls.

What cannot be read is refused with a reason (`Derivation.refusals`);
what was found is a `Derivation` (derivation.py).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from gateway.ops.model_families import FAMILIES
from gateway.templates.call_ids import call_id_pattern
from gateway.templates.chat_template import ChatTemplate, ChatTemplateError
from gateway.templates.derivation import NO_CALLS, Derivation
from gateway.templates.markers import call_markers, closing_token, common_prefix, opening_token
from gateway.templates.recognition import Recognition, recognise
from parsers import ParseResult, make_pipeline
from parsers.formats import REASONING_FORMATS, TOOL_FORMATS
from parsers.formats.derived import (
    ReasoningMarkers,
    tool_format_from,
)
from parsers.stages.tool_calls import ToolFormat

USER = "USER_SENTINEL_q7"
ANSWER = "ANSWER_SENTINEL_q7"
REASONING = "REASONING_SENTINEL_q7"
Call = tuple[str, dict[str, Any]]
FIRST: Call = ("fn_alpha", {"key_a": "val_a"})
SECOND: Call = ("fn_beta", {"key_b": 7})
TYPED: Call = (
    "fn_alpha",
    {"text": "a b", "count": 42, "ratio": 1.5, "flag": True, "list": ["x", "y"], "object": {"k": "v"}},
)
THINKING_SWITCHES = ("enable_thinking", "thinking")
CALL_ID = "call{index:05d}"  # 9 letters and digits, as Mistral's template demands (`call_ids.GIVEN`)
_CALL_ID = re.compile(r',?\s*"id"\s*:\s*"call\d{5}"|call\d{5}')
_TOKENS = re.compile(r"(?:\s*<[^<>\s]+>)+")
_PLAIN: dict[str, dict] = {"key_a": {"type": "string"}, "key_b": {"type": "integer"}}
_TYPED: dict[str, dict] = {
    **_PLAIN,
    "text": {"type": "string"},
    "count": {"type": "integer"},
    "ratio": {"type": "number"},
    "flag": {"type": "boolean"},
    "list": {"type": "array", "items": {"type": "string"}},
    "object": {"type": "object", "additionalProperties": {"type": "string"}},
}


def _tools(properties: dict[str, dict]) -> list[dict]:
    """The sample tools, every schema described (some templates print descriptions)."""
    described = {key: {**schema, "description": key} for key, schema in properties.items()}
    parameters = {"type": "object", "properties": described}
    return [
        {"type": "function", "function": {"name": name, "description": "d", "parameters": parameters}}
        for name in ("fn_alpha", "fn_beta")
    ]


# Every sample renders with the plain tools; the typed call with the typed
# ones too, which a template that cannot print every schema may refuse.
_TOOLS, _TYPED_TOOLS = _tools(_PLAIN), _tools(_TYPED)


def derive(template: ChatTemplate) -> Derivation:
    """Recognise or derive the parsers `template` implies (module docstring)."""
    started = time.perf_counter()
    found = Derivation(template.where)
    family = recognise(tuple(template.sources.values()), template.special_tokens)
    renders = _Renders(template, found.refusals)
    answer = renders.turn(_assistant(ANSWER))
    if answer is None or ANSWER not in answer:
        found.refusals.append("the template does not render an assistant answer")
        if family is not None:
            _by_markers(found, family, tools=True, reasoning=True)
        return found
    found.end_of_turn = _end_of_turn(answer)
    _find_tools(renders, answer, found, family)
    _find_reasoning(renders, answer, found, family)
    found.milliseconds = (time.perf_counter() - started) * 1000
    return found


def _by_markers(found: Derivation, family: Recognition, *, tools: bool, reasoning: bool) -> None:
    """The family's parsers for the parts named, recognised by its markers."""
    signature = family.signature
    if tools and signature.tool_call_parser:
        found.recognised_tools, found.tools_from = signature.tool_call_parser, family.evidence
    if reasoning and signature.reasoning_parser:
        found.recognised_reasoning, found.reasoning_from = signature.reasoning_parser, family.evidence


class _Renders:
    """The template rendered after one user message, failures noted once."""

    def __init__(self, template: ChatTemplate, refusals: list[str]) -> None:
        self._template = template
        self._refusals = refusals

    def turn(self, assistant: dict, tools: list[dict] = _TOOLS, noted: bool = True) -> str | None:
        """The turn; a failure not `noted` is a probe's, expected."""
        messages = [{"role": "user", "content": USER}, assistant]
        return self._render(messages, tools, noted, add_generation_prompt=False)

    def prompt(self, **kwargs: Any) -> str | None:
        return self._render([{"role": "user", "content": USER}], _TOOLS, True, add_generation_prompt=True, **kwargs)

    def _render(self, messages: list[dict], tools: list[dict], noted: bool, **kwargs: Any) -> str | None:
        template = self._template
        unset: dict[str, Any] = {
            name: ""
            for name, text in (("bos_token", template.bos_token), ("eos_token", template.eos_token))
            if text is None
        }
        try:
            return template.render(messages, tools=tools, **unset, **kwargs)
        except ChatTemplateError as error:
            if noted:
                self._refusals.append(f"a render failed: {error}")
            return None


def _assistant(content: str, *calls: tuple[str, dict], reasoning: str | None = None, call_id: str = "") -> dict:
    """An assistant message; its first call's id is `call_id` if given."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": (index == 0 and call_id) or CALL_ID.format(index=index),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for index, (name, args) in enumerate(calls)
        ]
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return message


def _end_of_turn(answer: str) -> tuple[str, ...]:
    """The token the template closes an assistant turn with, if it writes one."""
    token = opening_token(answer[answer.index(ANSWER) + len(ANSWER) :].lstrip())
    return (token,) if token else ()


def _region(answer: str, render: str, whole_tokens: bool = False) -> str:
    """What `render` writes where `answer` writes the answer; with
    `whole_tokens`, widened to the `<…>` tokens it starts or ends inside
    (`|><|START_ACTION|>…<|END_ACTION` -> `<|END_THINKING|><|START_ACTION|>…<|END_ACTION|>`),
    to a message header it starts inside (Muse's `to=NAME<|message|>…` ->
    `<|start|>assistant to=NAME<|message|>…`) and to a tag it ends inside
    (Kimi K3's `…<|close|>tools` -> `…<|close|>tools<|sep|>`)."""
    before, after = answer.split(ANSWER, 1)
    start = len(common_prefix(before, render))
    end = len(render) - len(common_prefix(after[::-1], render[start:][::-1]))
    if whole_tokens:
        opened = render.rfind("<", 0, start)
        start = opened if opened > render.rfind(">", 0, start) else start
        closed = render.find(">", end)
        end = closed + 1 if closed >= 0 and not 0 <= render.find("<", end) < closed else end
        header = _HEADER_CUT.search(render, 0, start)
        start = header.start() if header else start
        tag = _TAG_CUT.search(render, 0, end)
        closer = _TOKEN_NEXT.match(render, end) if tag else None
        end = closer.end() if closer else end
    return render[start:end]


_HEADER_CUT = re.compile(r"<[^<>\s]+>[^<>\n]*[^\s<>]\Z")  # a token and a header's words after it, up to the cut
_TAG_CUT = re.compile(r"<[^<>\s]+>\w+\Z")  # a token and its tag's name (XTML's `<|close|>tools`), up to the cut
_TOKEN_NEXT = re.compile(r"<[^<>\s]+>")


def _find_tools(renders: _Renders, answer: str, found: Derivation, family: Recognition | None) -> None:
    one, two = renders.turn(_assistant("", FIRST)), renders.turn(_assistant("", FIRST, SECOND))
    if one is None or one == renders.turn(_assistant("")):
        if family is not None and family.signature.tool_call_parser:
            _by_markers(found, family, tools=True, reasoning=False)  # LFM2.5: the tokens alone
        else:
            found.refusals.append(NO_CALLS)
        return
    typed = renders.turn(_assistant("", TYPED), _TYPED_TOOLS)
    typed_answer = renders.turn(_assistant(ANSWER), _TYPED_TOOLS)
    samples = [(_region(answer, one), [FIRST])]
    samples += [(_region(answer, two), [FIRST, SECOND])] if two is not None else []
    samples += [(_region(typed_answer, typed), [TYPED])] if typed and typed_answer else []
    found.call_id_template, found.call_ids = call_id_pattern(
        samples[0][0],
        samples[1][0] if two is not None else None,
        lambda call_id: renders.turn(_assistant("", FIRST, call_id=call_id), noted=False),
        FIRST[0],
        SECOND[0],
    )
    if not _read_by_family(found, family, answer, one, two):
        found.recognised_tools = _recognised_tools(samples)
        found.tools_from = "the template's renders" if found.recognised_tools else None
    markers, why = call_markers(samples[0][0], FIRST, samples[1][0] if two is not None else None, SECOND)
    if markers is None:
        if found.recognised_tools is None:
            found.refusals.append(f"tool calls: {why}")
        return
    found.tools = markers
    if found.recognised_tools is None and not _reads_back(tool_format_from(markers, found.end_of_turn), samples):
        found.refusals.append(
            f"tool calls: the derived format ({markers.style}) does not read the template's calls back"
        )
        found.tools = None


def _read_by_family(found: Derivation, family: Recognition | None, answer: str, one: str, two: str | None) -> bool:
    """Whether the family its markers name serves the tool calls: its parser
    reads the template's one call, and its two if it writes two (gpt-oss and
    GigaChat 3 write one per turn), back; if not, the refusal says so."""
    named = family.signature.tool_call_parser if family is not None else None
    if family is None or named is None:
        return False
    reasoning = family.signature.reasoning_parser
    widened = [(_reasoning_closed(_region(answer, one, whole_tokens=True), reasoning), [FIRST])]
    both = _reasoning_closed(_region(answer, two, whole_tokens=True), reasoning) if two is not None else ""
    widened += [(both, [FIRST, SECOND])] if SECOND[0] in both else []
    if _reads_back(named, widened, reasoning, family=True):
        _by_markers(found, family, tools=True, reasoning=False)
        return True
    found.refusals.append(
        f"tool calls: not as {named}: {family.evidence}, but it does not read the template's calls back"
    )
    return False


def _reasoning_closed(text: str, reasoning: str | None) -> str:
    """`text` as a model of a family that always reasons writes it: its
    reasoning closed before the calls (MiniMax M1's `</think>`), which the
    template's history cuts."""
    fmt = REASONING_FORMATS[reasoning] if reasoning else None
    if fmt is None or not fmt.always_thinking or fmt.stage is not None or not fmt.end or fmt.end in text:
        return text
    return fmt.end + text


def _recognised_tools(samples: list[tuple[str, list]]) -> str | None:
    """The first registered format that writes the sample call with the
    template's markers and reads every sample back; one that writes it to
    the character wins over one equal only whitespace aside."""
    text, [(name, args)] = samples[0]
    squeezed = _squeeze(_CALL_ID.sub("", text))
    alike: list[str] = []
    for key, fmt in TOOL_FORMATS.items():
        written = fmt.render_call(name, json.dumps(args))
        if _squeeze(written) != squeezed and not (
            (fmt.bare_start or fmt.bare_start_anywhere) and _squeeze(written) == fmt.call_start + squeezed
        ):
            continue
        if key == fmt.name and _reads_back(key, samples):
            if written == text:
                return key
            alike.append(key)
    return alike[0] if alike else _reading_alike(samples)


def _reading_alike(samples: list[tuple[str, list]]) -> str | None:
    """A registered format that opens its calls with the template's first
    marker and reads every sample back, though its own rendering is another
    of the forms it reads (Mistral's `NAME[CALL_ID]ID[ARGS]{…}`)."""
    opening = opening_token(samples[0][0].lstrip())
    return next(
        (
            key
            for key, fmt in TOOL_FORMATS.items()
            if key == fmt.name and opening in fmt.opening_markers and _reads_back(key, samples)
        ),
        None,
    )


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _reads_back(
    parser: str | ToolFormat, samples: list[tuple[str, list]], reasoning: str | None = None, family: bool = False
) -> bool:
    """Whether `parser` reads each sample text back to its calls, and
    nothing else: one-shot, and the one-call sample a character at a time
    too (the markers cut everywhere; the rest costs start-up time for no
    more cover). A `family`'s parser, recognised by its markers, reads the
    samples widened to whole tokens, with its `reasoning` parser, and may
    leave tokens around them (Gemma 4's `<|tool_response>`, the empty
    thinking Command R7B writes before an action)."""
    for index, (text, calls) in enumerate(samples):
        for pieces in ([text], list(text)) if index == 0 else ([text],):
            pipeline, result = make_pipeline(reasoning, parser, tools=_TYPED_TOOLS), ParseResult()
            for piece in pieces:
                result.add(pipeline.feed(piece))
            result.add(pipeline.finish())
            try:
                got = [(name, json.loads(arguments or "{}")) for name, arguments in result.tool_calls]
            except ValueError:  # arguments the format cut wrong
                return False
            left = (result.content or "").strip()
            if got != [(name, args) for name, args in calls] or (left and not (family and _TOKENS.fullmatch(left))):
                return False
    return True


def _find_reasoning(renders: _Renders, answer: str, found: Derivation, family: Recognition | None) -> None:
    if family is not None and family.signature.reasoning_parser:
        _by_markers(found, family, tools=False, reasoning=True)
        return
    prompts = {
        switch: (renders.prompt(**{switch: True}), renders.prompt(**{switch: False})) for switch in THINKING_SWITCHES
    }
    switches = tuple(switch for switch, (on, off) in prompts.items() if on != off)
    default = renders.prompt()
    thought = renders.turn(_assistant(ANSWER, reasoning=REASONING))
    start = end = None
    if thought is not None and REASONING in thought:
        before, after = thought.split(REASONING, 1)
        start, end = closing_token(before.rstrip()), opening_token(after.lstrip())
    elif switches:
        on, off = prompts[switches[0]]
        start, end = closing_token((on or "").rstrip()), closing_token((off or "").rstrip())
    elif default is not None and re.fullmatch(r"<\w+>", closing_token(default.rstrip()) or ""):
        start = closing_token(default.rstrip())  # a prefilled `<think>`-like tag, closed by `</think>`
        end = "</" + (start or "")[1:]
    if not start or not end or start == end:
        found.refusals.append("reasoning: the template writes no reasoning markers")
        return
    if answer.split(ANSWER, 1)[0].rstrip().endswith(start):
        found.refusals.append(f"reasoning: {start} is written before every answer too, so it does not open reasoning")
        return
    opens = default is not None and default.rstrip().endswith(start)
    on_by_default = not switches or default == prompts[switches[0]][0]
    found.reasoning = ReasoningMarkers(start, end, opens, switches, on_by_default)
    found.recognised_reasoning = _recognised_reasoning(found.reasoning, found.recognised_tools, found.end_of_turn)
    found.reasoning_from = "the template's renders" if found.recognised_reasoning else None


def _recognised_reasoning(markers: ReasoningMarkers, tool_name: str | None, end_of_turn: tuple[str, ...]) -> str | None:
    """A registered `<think>`-style format with these markers, whose
    switches the template reads; first one the model-name table pairs with
    the recognised tool-call format, then one ending turns the same way."""
    always = markers.prompt_opens and not markers.switches
    matching = [
        key
        for key, fmt in REASONING_FORMATS.items()
        if key == fmt.name
        and fmt.stage is None
        and fmt.separates
        and (fmt.start, fmt.end, fmt.always_thinking) == (markers.start, markers.end, always)
        and (always or (set(fmt.thinking_switches) <= set(markers.switches) and fmt.thinking_switches))
        and (always or fmt.thinking_by_default == markers.on_by_default)
    ]
    paired = {family.reasoning_parser for family in FAMILIES if tool_name and family.tool_call_parser == tool_name}
    ranked = sorted(
        matching, key=lambda key: (key not in paired, not set(end_of_turn) & set(REASONING_FORMATS[key].end_of_turn))
    )
    return ranked[0] if ranked else None
