"""Hugging Face chat templates, rendered as transformers renders them.

The environment is transformers' (`utils/chat_template_utils.py`,
`_compile_jinja_template`): jinja2's `ImmutableSandboxedEnvironment` (with
two shortcuts that change no outcome, sandbox.py) with
`trim_blocks`, `lstrip_blocks` and the `loopcontrols` extension; a
`{% generation %}…{% endgeneration %}` block that renders its body (it only
marks assistant text for training masks); a `tojson` filter that does not
escape HTML or non-ASCII and takes `indent`, `separators` and `sort_keys`;
the globals `raise_exception(message)`, `strftime_now(format)` (local time),
a `dict` that offers nothing but a call and `fromkeys`, and a `namespace`
that refuses names starting with "_".

A template is compiled once (per model and process) and rendered per
request with the
variables `apply_chat_template` passes: `messages`, `tools` (None without
tools), `documents`, `add_generation_prompt`, `bos_token` and `eos_token`
(each only when the model has one), and every `chat_template_kwargs` entry.
Messages are first made what templates expect (see `chat_messages`).

Tool-call `arguments` are given as mappings, as transformers and vLLM give
them. A template that fails with mappings but renders with each `arguments`
as the request's JSON text (DeepSeek V3.1 and R1, functionary v3.2 write
`'…' + arguments`) gets the text, as llama.cpp detects which form a template
wants (minja's `requires_object_arguments`); the form that rendered is kept
per template and tried first from then on (docs/template-mode.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils

from gateway.templates.chat_messages import template_messages
from gateway.templates.sandbox import TemplateSandbox

# The variables the renderer passes itself, from the request's own fields:
# `chat_template_kwargs` may not name them (transformers' `apply_chat_template`
# takes them as its own arguments too).
RENDER_ARGUMENTS = ("messages", "tools", "documents", "add_generation_prompt")


class ChatTemplateError(Exception):
    """A chat template that cannot be read, compiled or rendered. The message
    is one line and names the template's file."""

    def __init__(self, where: str, problem: str) -> None:
        self.problem = " ".join(problem.split())
        super().__init__(f"{where}: {self.problem}")


class PromptTooLong(ChatTemplateError):
    """A prompt the template writes past the model's `max_prompt_chars`."""


class TemplateRaised(jinja2.TemplateError):
    """What a template's `raise_exception(message)` raises."""


def _raise_exception(message: Any) -> None:
    raise TemplateRaised(str(message))


# `tojson` as templates mostly call it, with no arguments: the encoder
# `json.dumps` would make for these options on each call, made once.
_PLAIN_JSON = json.JSONEncoder(ensure_ascii=False)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    if not ensure_ascii and indent is None and separators is None and not sort_keys:
        return _PLAIN_JSON.encode(value)
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class RememberedJson:
    """`tojson` that writes each of the objects it was given to keep (a
    request's tools, and their list) once, with the default options, and
    answers that text after: an agent sends the same tools every turn, and
    writing their schemas was most of a short conversation's render
    (bench/README.md, "Performance IV: template render"). The objects are
    held here, so their ids stay theirs; the sandbox lets no template
    change a dict or a list."""

    def __init__(self) -> None:
        self._kept: dict[int, object] = {}
        self._texts: dict[int, str] = {}

    def keep(self, values: object) -> None:
        """Keep `values` (and each item, for a list) from now on, in place of what was kept."""
        items = values if isinstance(values, list) else []
        self._kept = {id(value): value for value in (values, *items)}
        self._texts = {}

    def __call__(
        self,
        value: Any,
        ensure_ascii: bool = False,
        indent: int | str | None = None,
        separators: tuple[str, str] | None = None,
        sort_keys: bool = False,
    ) -> str:
        if ensure_ascii or indent is not None or separators is not None or sort_keys:
            return _tojson(value, ensure_ascii, indent, separators, sort_keys)
        if self._kept.get(id(value)) is not value:
            return _PLAIN_JSON.encode(value)
        text = self._texts.get(id(value))
        if text is None:
            text = self._texts[id(value)] = _PLAIN_JSON.encode(value)
        return text


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class _TemplateDict:
    """`dict(...)` and `dict.fromkeys(...)`, and no way to the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


def _check_attribute_name(name: Any) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise jinja2.exceptions.SecurityError(f"a namespace may not hold the underscore-prefixed attribute {name!r}")


class _TemplateNamespace(jinja2.utils.Namespace):
    """jinja's `namespace()`, refusing attribute names that start with "_"."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        self, rest = args[0], args[1:]
        attributes = dict(*rest, **kwargs)
        for name in attributes:
            _check_attribute_name(name)
        jinja2.utils.Namespace.__init__(self, attributes)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_attribute_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)


class _GenerationBlock(jinja2.ext.Extension):
    """`{% generation %}…{% endgeneration %}` renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: Any) -> str:
        return caller()


def _environment() -> TemplateSandbox:
    environment = TemplateSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationBlock, jinja2.ext.loopcontrols],
    )
    # not folded at compile time (`{{ 'x' * 10**10 }}` would be built while
    # loading the template); at render time they are bounded with the render
    environment.intercepted_binops = frozenset({"*", "**"})
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    environment.globals["dict"] = _TemplateDict()
    environment.globals["namespace"] = _TemplateNamespace
    return environment


# What a template can do wrong while rendering: its own raise_exception, a
# sandbox refusal, an undefined value used, or Python refusing an operation
# (a string plus a mapping, a missing key, a value json cannot write).
_RENDER_FAILURES = (
    jinja2.TemplateError,
    TypeError,
    ValueError,
    LookupError,
    ArithmeticError,
    AttributeError,
    RecursionError,
)


def compile_template(source: str, where: str) -> jinja2.Template:
    """The template compiled in transformers' environment; `where` names it in
    errors."""
    try:
        return _environment().from_string(source)
    except jinja2.TemplateSyntaxError as error:
        raise ChatTemplateError(
            where, f"the chat template does not compile: {error.message} (line {error.lineno})"
        ) from error
    except RecursionError:  # jinja parses and compiles by recursion: too deep a nesting exhausts the stack
        raise ChatTemplateError(
            where, "the chat template does not compile: it nests deeper than the template parser reaches"
        ) from None


class ChatTemplate:
    """A model's chat template (or its named set, `default` and `tool_use`),
    compiled once and rendered per request."""

    def __init__(
        self,
        source: str | Mapping[str, str],
        *,
        bos_token: str | None = None,
        eos_token: str | None = None,
        add_bos_token: bool | None = None,
        where: str = "chat template",
        max_prompt_chars: int | None = None,
        compile_now: bool = True,
        special_tokens: Iterable[str] = (),
    ) -> None:
        named = {"default": source} if isinstance(source, str) else dict(source)
        if "default" not in named:
            raise ChatTemplateError(where, f"no template named 'default' among {sorted(named)}")
        self.where = where
        self.sources = named
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.add_bos_token = add_bos_token  # whether the model's tokenizer adds BOS itself (None: not said)
        self.max_prompt_chars = max_prompt_chars
        self.special_tokens = frozenset(special_tokens)  # the tokenizer's special tokens, where the source lists them
        self._compiled: dict[str, jinja2.Template] = {}
        # how messages are made what templates read; a render worker's
        # templates share one that remembers its conversation (prompt_render.py)
        self.template_messages: Callable[..., list[dict[str, Any]]] = template_messages
        if compile_now:
            self.compile()
        self._text_arguments: dict[str, bool] = {}  # per named template: the arguments form that last rendered
        self._stop_texts = tuple(end_of_turn_texts(named.values(), eos_token))  # read once: a scan of the sources

    def compile(self) -> None:
        """Compile each named template, once; ChatTemplateError if one does
        not compile. Compiling runs template code: jinja folds constant
        expressions as it compiles, calling their filters (`{{ "a"|center(
        400000000) }}` builds that string), so the gateway compiles a model's
        template only in a bounded worker (render_pool.py,
        derivation_process.py) and keeps its own copy uncompiled
        (`compile_now=False`)."""
        if not self._compiled:
            self._compiled = {name: compile_template(text, self.where) for name, text in self.sources.items()}

    def use_tojson(self, tojson: Callable[..., str]) -> None:
        """Render with this `tojson` filter (a render worker's
        RememberedJson), compiling first."""
        self.compile()
        for compiled in self._compiled.values():
            compiled.environment.filters["tojson"] = tojson

    @property
    def source(self) -> str:
        """The default template's text."""
        return self.sources["default"]

    def render(
        self,
        messages: Iterable[Mapping[str, Any]],
        *,
        tools: list[dict] | None = None,
        documents: list[dict] | None = None,
        add_generation_prompt: bool = True,
        **template_kwargs: Any,
    ) -> str:
        """The prompt for these OpenAI-shaped messages. `template_kwargs`
        (a request's chat_template_kwargs) are template variables, and
        replace bos_token / eos_token if they name them, as in transformers.
        Tool-call arguments go in the form this template last rendered
        with (mappings at first), else in the other (module docstring).
        A template that raises
        (its own `raise_exception`, a sandbox refusal, a failing operation)
        raises ChatTemplateError carrying its message; one that writes more
        than `max_prompt_chars` is stopped there with PromptTooLong."""
        tools = tools or None
        self.compile()
        name = "tool_use" if tools and "tool_use" in self._compiled else "default"
        template = self._compiled[name]
        variables = {
            **self._special_tokens(),
            **template_kwargs,
            "tools": tools,
            "documents": documents,
            "add_generation_prompt": add_generation_prompt,
        }
        messages = list(messages)
        text_arguments = self._text_arguments.get(name, False)
        served = self.template_messages(messages, text_arguments=text_arguments)
        try:
            return self._joined(template.generate(messages=served, **variables))
        except _RENDER_FAILURES as error:
            other = self.template_messages(messages, text_arguments=not text_arguments)
            if other == served:
                raise ChatTemplateError(self.where, _describe(error)) from error
            try:
                prompt = self._joined(template.generate(messages=other, **variables))
            except _RENDER_FAILURES:
                raise ChatTemplateError(self.where, _describe(error)) from error
            self._text_arguments[name] = not text_arguments
            return prompt

    def _joined(self, pieces: Iterable[str]) -> str:
        """The rendered pieces as one prompt, checked against
        `max_prompt_chars` as they come."""
        if self.max_prompt_chars is None:
            return "".join(pieces)
        written: list[str] = []
        length = 0
        for piece in pieces:
            length += len(piece)
            if length > self.max_prompt_chars:
                raise PromptTooLong(self.where, f"the prompt is longer than {self.max_prompt_chars} characters")
            written.append(piece)
        return "".join(written)

    def _special_tokens(self) -> dict[str, str]:
        tokens = {"bos_token": self.bos_token, "eos_token": self.eos_token}
        return {name: text for name, text in tokens.items() if text is not None}

    def stop_texts(self) -> list[str]:
        """The texts that end the assistant's turn: the eos token and the
        known end-of-turn markers that the template writes itself."""
        return list(self._stop_texts)

    def strip_bos(self, prompt: str) -> str:
        """The prompt without a leading BOS text, for servers that add BOS
        themselves (llama.cpp's /completion does)."""
        if self.bos_token and prompt.startswith(self.bos_token):
            return prompt[len(self.bos_token) :]
        return prompt


def _describe(error: BaseException) -> str:
    if isinstance(error, jinja2.TemplateError) and error.message:
        return error.message
    return f"{type(error).__name__}: {error}"


# Markers that end a turn in the families we know; a template's stop texts
# are those of these it writes literally. gpt-oss (harmony) writes <|end|>
# after an analysis message and goes on, so there it is not a stop.
KNOWN_END_OF_TURN = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<end_of_turn>",
    "<|return|>",
    "<|call|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<｜end▁of▁sentence｜>",
    "<|END_OF_TURN_TOKEN|>",
    "<|user|>",
    "<|observation|>",
    # Gemma 4 ends a turn of calls with <|tool_response>, where the tool's
    # answer goes (its chat_template.jinja, huggingface.co/google/gemma-4-31B-it;
    # tests/fixtures/chat_templates/google-gemma-4-31B-it.jinja).
    "<|tool_response>",
)
_HARMONY_MARK = "<|channel|>"


def end_of_turn_texts(sources: Iterable[str], eos_token: str | None) -> list[str]:
    """eos_token, then each known end-of-turn marker found in the sources."""
    sources = list(sources)
    harmony = any(_HARMONY_MARK in text for text in sources)
    found = [eos_token] if eos_token else []
    for marker in KNOWN_END_OF_TURN:
        if marker == "<|end|>" and harmony:
            continue
        if marker not in found and any(marker in text for text in sources):
            found.append(marker)
    return found


# Openings of a reasoning block that a template may leave open at the end of
# the prompt: <think> (Qwen3, DeepSeek R1, GLM, MiniMax…), gpt-oss's analysis
# channel, Seed-OSS (whose earlier template, llama.cpp's
# models/templates/ByteDance-Seed-OSS.jinja, opens a budget reflection in it
# for `thinking_budget: 0`, which the model closes with the thought),
# Command A reasoning, Kimi's ◁think▷.
REASONING_OPENINGS = (
    "<think>",
    "<|channel|>analysis<|message|>",
    "<seed:think>",
    "<seed:think><seed:cot_budget_reflect>",
    "<|START_THINKING|>",
    "◁think▷",
)


def prompt_opens_reasoning(prompt: str, openings: Iterable[str] = REASONING_OPENINGS) -> bool:
    """Whether the prompt ends (trailing whitespace aside) inside a reasoning
    block the template opened, so the model's text starts as reasoning."""
    tail = prompt.rstrip()
    return any(tail.endswith(opening) for opening in openings)
