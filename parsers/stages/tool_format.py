"""A tool-call format as data: `ToolFormat`, read by the tool-call stage
(`parsers.stages.tool_calls`) and declared in `parsers.formats`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson


@dataclass(frozen=True, slots=True)
class ParameterTags:
    """Arguments written one parameter at a time with `template` (`{key}`,
    `{value}`: a string as it is, any other value as JSON), for formats that
    write parameters as tags: a `ToolFormat.render_arguments`."""

    template: str

    def __call__(self, arguments: str) -> str:
        return "".join(
            self.template.replace("{key}", key).replace(
                "{value}", value if isinstance(value, str) else orjson.dumps(value).decode()
            )
            for key, value in orjson.loads(arguments).items()
        )


@dataclass(frozen=True)
class ToolFormat:
    """A tool-call format, as data.

    `body` builds the incremental body grammar for what follows
    `call_start` (or one of `other_call_starts`); it receives the parser as its `CallSink` (`start(name)`,
    `args(text)`, `end()`) and may report several calls. `call_end` (may be
    empty) closes the call; `section_start`/`section_end` optionally wrap a
    block of calls, and `other_section_starts`/`other_section_ends` are
    other spellings of them that models write (DeepSeek R1 distills'
    `<｜tool_calls_begin｜>`, Kimi K2's singular `<|tool_call_section_begin|>`).
    `bare_start` lists characters that start a call body
    without any marker at the start of the output (Llama 3's bare `{`), and
    `call_separator` (`;`) may join such calls; `bare_start_anywhere` lists
    those that start one anywhere in the text (the pythonic `[`; the
    body must consume that character before it may fail). `unmarked_starts` are
    markers anywhere in the text that begin a call body without
    `call_start`, the body reading the marker itself (Qwen3-Coder's
    `<function=` with no `<tool_call>` opener); such a call must name a
    function the request offers, or it is content (the body checks;
    a code tag's call, `parsers.grammars.code_tag`, is the code tool's, as
    llama.cpp reads it). `dropped_markers` are
    structural tokens removed where they stray outside a call;
    `end_of_turn` tokens are removed from the whole output (`Pipeline`).
    `fallback_drops`: markers removed from text that began like a call but
    held none, on its way to content (Inkling, whose control tokens never
    reach content); if nothing is left, no fallback is counted.
    `passthrough_blocks` are (opener, closer) pairs: the text from an opener
    to its closer is content as written, never read for calls (K2 Horizon's
    thinking blocks, when the reasoning stage does not take them out).
    `call_template` writes one call the way the model does, from `{name}` and
    `{arguments}`: for demos, benchmarks and tests. `{arguments}` is the JSON
    text, or what `render_arguments` makes of it: each parameter written
    with a template (`ParameterTags`) for formats that write parameters as
    tags, keyword arguments for the pythonic ones. `suffixed_tokens` names the
    tokens a checkpoint may spell with a suffix (`<tool_call:opensource>`);
    the markers are written bare (`parsers.stages.token_suffix`). `call_id_template`, if set, is how the model family writes call
    ids, on every surface (`{name}`, `{n}` = calls in the conversation before this one,
    `{random:N}` = N random ASCII letters and digits); otherwise ids are the surface's own (`call_…`, `toolu_…`).
    `drops_text_after_calls`: text after the first call is not content
    (DeepSeek: its peers keep only the text before the calls; a block that
    held no call is still returned as content).
    `framing`: the reasoning format whose stage reads the messages this
    format's calls are written in (Harmony's channels). With no reasoning
    parser set, the pipeline reads them with it all the same, keeping the
    reasoning in the content: the framing never reaches the content as
    text (docs/fidelity.md, gpt-oss).
    `parses_without_tools`: the model calls tools its template declares
    even when the request offers none (MiniMax M3), so a request without
    tools still has its calls read, unless its `tool_choice` is `none`.
    """

    name: str
    models: str
    call_start: str
    call_end: str
    call_template: str
    body: Callable
    other_call_starts: tuple[str, ...] = ()
    section_start: str | None = None
    section_end: str | None = None
    other_section_starts: tuple[str, ...] = ()
    other_section_ends: tuple[str, ...] = ()
    bare_start: str = ""
    bare_start_anywhere: str = ""
    unmarked_starts: tuple[str, ...] = ()
    call_separator: str = ""
    dropped_markers: tuple[str, ...] = ()
    passthrough_blocks: tuple[tuple[str, str], ...] = ()
    fallback_drops: tuple[str, ...] = ()
    end_of_turn: tuple[str, ...] = ()
    needs_special_tokens: bool = False
    parses_without_tools: bool = False
    drops_text_after_calls: bool = False
    call_id_template: str | None = None
    render_arguments: Callable[[str], str] | None = None
    suffixed_tokens: tuple[str, ...] = ()
    framing: str | None = None

    @property
    def opening_markers(self) -> tuple[str, ...]:
        """The markers a model writes to begin its tool calls: the section
        starts and the call starts, as a model may write a call without
        opening a section (Kimi K2 Thinking's `<|tool_call_begin|>`, as
        llama.cpp's test-chat.cpp writes it). Bare and unmarked starts are
        text too common to count."""
        sections = (self.section_start, *self.other_section_starts) if self.section_start else ()
        return (*sections, self.call_start, *self.other_call_starts)

    def render_call(self, name: str, arguments: str) -> str:
        """One call as the model writes it; `arguments` is JSON text."""
        if self.render_arguments is not None:
            arguments = self.render_arguments(arguments)
        return self.call_template.replace("{name}", name).replace("{arguments}", arguments)
