"""The round trip of issue 43: a model is trained on the text its own chat
template writes for an assistant turn, so that text, parsed back by
parsegate with the model's parsers, must give back the calls, arguments,
reasoning and content that went in, whole and at every split.

The turn's text is what the model writes. With P the prompt for the
conversation without its last (assistant) turn, `add_generation_prompt`
true, and F the whole conversation rendered with `add_generation_prompt`
false, the turn is what F writes after P, up to the first of the
template's stop texts (`ChatTemplate.stop_texts()`: what the gateway asks
the backend to stop at, so what the backend would hand back). A template
whose F does not begin with P rewrites the turn it writes into history
(drops the reasoning its generation prompt opens, say): it cannot write
that turn as the model writes it.

A shape is written when the turn holds its reasoning, its content and each
of its calls (`Shape.witnesses`); a template that drops any of them cannot
write the shape. A written turn round-trips when the parse gives back:
each call's name and arguments, compared as JSON values; the reasoning and
the content, compared after removing whitespace at their two ends only (the
templates pad and strip those ends: Qwen3's `\\n</think>\\n\\n`, `content
| trim`), an absent field being an empty one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gateway.templates.chat_template import ChatTemplate, ChatTemplateError, prompt_opens_reasoning
from gateway.templates.sources import load_chat_template
from parsers import ParseResult, make_pipeline, output_format, tool_format

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "chat_templates"


@dataclass(frozen=True)
class Model:
    """A chat template fixture and the model it is from: its Hugging Face
    name, the parsers parsegate documents for it (docs/parsers.md), its
    tokenizer's BOS and EOS texts, and the `chat_template_kwargs` a
    conversation is rendered with (and its request carries): `thinking`
    where its last turn has reasoning, `no_thinking` where it has none.
    `reasoning_block`: the (opening, closing) markers of a block whose text
    the template writes as reasoning, where the template may write a turn's
    content there (gpt-oss's analysis channel). `always_opens`: the text
    the model begins every turn with although its generation prompt does
    not write it (MiniMax M1's `<think>`): a turn without it is not one the
    model writes."""

    model: str
    tool_call_parser: str | None
    reasoning_parser: str | None
    bos: str | None = None
    eos: str | None = None
    thinking: dict = field(default_factory=dict)
    no_thinking: dict = field(default_factory=dict)
    reasoning_block: tuple[str, str] | None = None
    always_opens: str | None = None

    def kwargs(self, shape: Shape) -> dict:
        return self.thinking if shape.reasoning else self.no_thinking


def _tool(name: str, properties: dict, required: Sequence[str] = ()) -> dict:
    """A tool as requests declare it, every parameter described (Command R+
    and Apertus templates read each parameter's description), and objects
    with `additionalProperties` (Command R+ writes each object's type from
    it)."""
    properties = {key: {**schema, "description": f"The {key}."} for key, schema in properties.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": properties, "required": list(required)},
        },
    }


STRING = {"type": "string"}
TOOLS = [
    _tool("get_weather", {"city": STRING, "days": {"type": "integer"}}, ["city"]),
    _tool(
        "search_docs",
        {
            "filter": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "properties": {
                    "tags": {"type": "array", "items": STRING},
                    "range": {"type": "object", "properties": {"min": {"type": "number"}, "max": {"type": "number"}}},
                },
            },
            "ids": {"type": "array", "items": {"type": "integer"}},
            "exact": {"type": "boolean"},
        },
    ),
    _tool("write_note", {"text": STRING}, ["text"]),
    _tool("ping", {}),
]


@dataclass(frozen=True)
class Shape:
    """The last assistant turn of a conversation: its calls (name,
    arguments), content and reasoning."""

    name: str
    calls: tuple[tuple[str, dict], ...]
    content: str = ""
    reasoning: str = ""

    @property
    def witnesses(self) -> list[str]:
        """Texts a turn that writes this shape holds: its reasoning, its
        content, and each call's name as often as it is called."""
        texts = [text for text in (self.reasoning, self.content) if text]
        return texts + [name for name, _ in self.calls]


PARIS = ("get_weather", {"city": "Paris", "days": 3})
TOKYO = ("get_weather", {"city": "Tokyo", "days": 1})
TRICKY = 'She said "hi" \\ C:\\temp\\new\nline two\ttab, Grüße, 天气 🙂'
REASONING = "The user wants the weather in Paris; the tool knows it."
CONTENT = "Let me check the weather."


def own_markers(tool_call_parser: str | None, stop_texts: Sequence[str] = ()) -> str:
    """The tool-call format's own markers (opening and closing a call and a
    section), as text a string argument holds; not those that end the turn
    (gpt-oss's `<|call|>`): the backend stops at them, whatever the parser."""
    if tool_call_parser is None:
        return "a <tool_call> </tool_call> b"
    fmt = tool_format(tool_call_parser)
    markers = (fmt.section_start, fmt.call_start, fmt.call_end, fmt.section_end)
    kept = dict.fromkeys(marker for marker in markers if marker and marker.strip() and marker not in stop_texts)
    return "a " + " ".join(kept) + " b"


def shapes(tool_call_parser: str | None, stop_texts: Sequence[str] = ()) -> dict[str, Shape]:
    """The conversation shapes of issue 43, by name."""
    nested = {"filter": {"tags": ["a", "b c"], "range": {"min": 1, "max": 2.5}}, "ids": [1, 2, 3], "exact": True}
    every = [
        Shape("one_call", (PARIS,)),
        Shape("nested", (("search_docs", nested),)),
        Shape("strings", (("write_note", {"text": TRICKY}),)),
        Shape("own_markers", (("write_note", {"text": own_markers(tool_call_parser, stop_texts)}),)),
        Shape("two_calls", (PARIS, TOKYO)),
        Shape("empty_arguments", (("ping", {}),)),
        Shape("content_then_call", (PARIS,), content=CONTENT),
        Shape("reasoning_then_call", (PARIS,), reasoning=REASONING),
        Shape("reasoning_content_call", (PARIS,), content=CONTENT, reasoning=REASONING),
    ]
    return {shape.name: shape for shape in every}


SHAPE_NAMES = tuple(shapes(None))


class _FixedLetters:
    """`{random:N}` in a call-id template, made the same on every run."""

    def __format__(self, length: str) -> str:
        return "a1B2c3D4e5F6g7H8"[: int(length)]


def call_id(tool_call_parser: str | None, name: str, index: int) -> str:
    """The id of call `index`, as the model family writes ids (Kimi K2's
    `functions.NAME:N`, Mistral's 9 letters and digits) where its format
    says how, else an OpenAI-shaped one."""
    template = tool_format(tool_call_parser).call_id_template if tool_call_parser else None
    if template is None:
        return f"call_{index:05d}"
    return template.format(name=name, n=index, random=_FixedLetters())


def messages(model: Model, shape: Shape) -> list[dict]:
    calls = [
        {
            "id": call_id(model.tool_call_parser, name, index),
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
        }
        for index, (name, arguments) in enumerate(shape.calls)
    ]
    turn: dict = {"role": "assistant", "content": shape.content, "tool_calls": calls}
    if shape.reasoning:
        turn["reasoning_content"] = shape.reasoning
    return [{"role": "user", "content": "What is the weather in Paris? Save a note too."}, turn]


@dataclass(frozen=True)
class Turn:
    """What a template writes for a shape's last turn: `prompt` (P) and
    `text` (the model's part), or `refused`, why it cannot write it."""

    prompt: str = ""
    text: str = ""
    refused: str | None = None


@functools.cache
def template(file: str, bos: str | None, eos: str | None) -> ChatTemplate:
    return load_chat_template(FIXTURES / file, bos_token=bos, eos_token=eos)


def model_shapes(file: str, model: Model) -> dict[str, Shape]:
    """The shapes, their markers those of `model`'s tool-call format."""
    return shapes(model.tool_call_parser, template(file, model.bos, model.eos).stop_texts())


def assistant_turn(file: str, model: Model, shape: Shape) -> Turn:
    """The text `file`'s template writes for `shape`'s turn (module docstring)."""
    chat = template(file, model.bos, model.eos)
    conversation, kwargs = messages(model, shape), model.kwargs(shape)
    try:
        prompt = chat.render(conversation[:-1], tools=TOOLS, add_generation_prompt=True, **kwargs)
        whole = chat.render(conversation, tools=TOOLS, add_generation_prompt=False, **kwargs)
    except ChatTemplateError as error:
        return Turn(refused=f"the template raises: {error.problem}")
    if not whole.startswith(prompt):
        return Turn(prompt, refused=f"the turn does not begin with the generation prompt {prompt[-40:]!r}")
    text = whole[len(prompt) :]
    ends = [text.find(stop) for stop in chat.stop_texts() if stop in text]
    text = text[: min(ends)] if ends else text
    missing = _missing(text, shape)
    if missing is not None:
        return Turn(prompt, text, refused=f"the turn does not write {missing!r}")
    if model.always_opens and not text.startswith(model.always_opens):
        return Turn(prompt, text, refused=f"the turn does not begin with {model.always_opens!r}, as the model's do")
    miswritten = _miswritten(text, shape)
    if miswritten is not None:
        return Turn(prompt, text, refused=miswritten)
    if shape.content and model.reasoning_block and _inside(text, shape.content, model.reasoning_block):
        return Turn(prompt, text, refused=f"the turn writes its content inside {model.reasoning_block[0]!r}")
    return Turn(prompt, text)


def _inside(text: str, part: str, block: tuple[str, str]) -> bool:
    """Whether `part` is written between `block`'s opening and its closing."""
    at = text.find(part)
    opened = text.rfind(block[0], 0, at)
    return opened != -1 and block[1] not in text[opened:at]


def _missing(text: str, shape: Shape) -> str | None:
    rest = text
    for witness in shape.witnesses:
        if witness not in rest:
            return witness
        rest = rest.replace(witness, "", 1)
    return None


def _miswritten(text: str, shape: Shape) -> str | None:
    """An argument the turn writes as another value would be: a string
    with a backslash written between quotes as it is, unescaped (read as a
    Python or JSON literal, its backslashes are escapes), or an argument
    that is not a string written as a quoted string (`days="3"`)."""
    for _, arguments in shape.calls:
        for key, value in arguments.items():
            if isinstance(value, str):
                if "\\" in value and any(f"{quote}{value}{quote}" in text for quote in "'\""):
                    return f"the turn writes {key!r} between quotes without escaping its backslashes"
            elif any(f"{key}={quote}" in text for quote in "'\""):
                return f"the turn writes {key!r}, not a string, as a quoted string"
    return None


def parse(model: Model, shape: Shape, turn: Turn, cuts: Sequence[int] = ()) -> dict:
    """The turn's text parsed as the gateway parses a reply to P: the
    model's parsers, the request's tools and `chat_template_kwargs`,
    starting in reasoning where P leaves a reasoning block open; fed whole,
    or in pieces cut at `cuts`."""
    reasoning, tools, kwargs = model.reasoning_parser, model.tool_call_parser, model.kwargs(shape)
    opens = reasoning is not None and prompt_opens_reasoning(turn.prompt)
    pipeline = make_pipeline(
        reasoning,
        tools,
        output=output_format(reasoning, tools),
        tools=TOOLS,
        chat_template_kwargs=kwargs,
        force_reasoning=True if opens else None,
    )
    result = ParseResult()
    bounds = [0, *sorted(set(cuts)), len(turn.text)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        result.add(pipeline.feed(turn.text[start:end]))
    result.add(pipeline.finish())
    return result.to_json()


def difference(parsed: dict, shape: Shape) -> str | None:
    """The first way `parsed` differs from what went in, or None."""
    calls = [(call["name"], call["arguments"]) for call in parsed["tool_calls"]]
    if calls != [(name, arguments) for name, arguments in shape.calls]:
        return f"calls {calls!r}, not {list(shape.calls)!r}"
    for key, sent in (("reasoning_content", shape.reasoning), ("content", shape.content)):
        got = (parsed[key] or "").strip()
        if got != sent:
            return f"{key} {got!r}, not {sent!r}"
    return None
