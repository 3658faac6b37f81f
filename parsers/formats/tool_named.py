"""Tool calls whose header names the function, followed by JSON arguments
(docs/parsers.md): DeepSeek V3 / V3.1 and Kimi K2. Their markers are special
tokens the backend must keep.

DeepSeek V3, one call (two calls: two `<｜tool▁call▁begin｜>` blocks in one section)::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>

DeepSeek V3.1::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>

Kimi K2 (`:0` is a conversation-wide counter, ignored; ids are reassigned)::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>
"""

from functools import partial
from typing import TypedDict

from parsers.formats.table import register
from parsers.grammars.named_call import NamedJsonCall
from parsers.stages.tool_calls import ToolFormat


class _DeepSeekMarkers(TypedDict):
    section_start: str
    other_section_starts: tuple[str, ...]
    section_end: str
    call_start: str
    dropped_markers: tuple[str, ...]
    end_of_turn: tuple[str, ...]
    needs_special_tokens: bool
    drops_text_after_calls: bool


_DEEPSEEK_MARKERS = _DeepSeekMarkers(
    section_start="<｜tool▁calls▁begin｜>",
    # Other spellings R1 distills write for it, as llama.cpp reads them.
    other_section_starts=(
        "<｜tool_calls_begin｜>",
        "<｜tool calls begin｜>",
        "<｜tool\\_calls\\_begin｜>",
        "<｜tool▁calls｜>",
    ),
    section_end="<｜tool▁calls▁end｜>",
    call_start="<｜tool▁call▁begin｜>",
    dropped_markers=("<｜tool▁calls▁end｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"),
    end_of_turn=("<｜end▁of▁sentence｜>",),
    needs_special_tokens=True,
    drops_text_after_calls=True,
)

# deepseekv3 reads `<｜tool▁calls｜>` as a call start (below), not a section start.
_DEEPSEEK_V3_MARKERS: _DeepSeekMarkers = _DEEPSEEK_MARKERS.copy()
_DEEPSEEK_V3_MARKERS["other_section_starts"] = tuple(
    marker for marker in _DEEPSEEK_MARKERS["other_section_starts"] if marker != "<｜tool▁calls｜>"
)

register(
    ToolFormat(
        name="deepseekv3",
        models="DeepSeek V3 / V3-0324, R1 / R1-0528",
        # R1 and its distills sometimes open calls with `<｜tool▁calls｜>`, with
        # or without a `<｜tool▁call▁begin｜>` after it, as llama.cpp's R1 parser
        # reads it: here it starts a call whose body may repeat the call start.
        other_call_starts=("<｜tool▁calls｜>",),
        call_end="\n```<｜tool▁call▁end｜>",
        body=partial(
            NamedJsonCall,
            args_start="```json",
            name_pattern=r"\s*(?:<｜tool▁call▁begin｜>)?(?:function)?<｜tool▁sep｜>(?P<name>[^\n]+?)\s*",
            args_end="<｜tool▁call▁end｜>",
        ),
        call_template=(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{arguments}\n```"
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        **_DEEPSEEK_V3_MARKERS,
    )
)
register(
    ToolFormat(
        name="deepseekv31",
        models="DeepSeek V3.1 / V3.1-Terminus / V3.2-Exp",
        call_end="<｜tool▁call▁end｜>",
        body=partial(
            NamedJsonCall,
            args_start="<｜tool▁sep｜>",
            name_pattern=r"\s*(?P<name>[^\n]+?)\s*",
            args_end="<｜tool▁call▁end｜>",
        ),
        call_template=(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{arguments}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        **_DEEPSEEK_MARKERS,
    )
)
register(
    ToolFormat(
        name="kimi_k2",
        models="Kimi K2 / K2-Instruct-0905 / K2-Thinking / K2.5",
        section_start="<|tool_calls_section_begin|>",
        section_end="<|tool_calls_section_end|>",
        other_section_starts=("<|tool_call_section_begin|>",),  # the singular, as vLLM reads it
        other_section_ends=("<|tool_call_section_end|>",),
        call_start="<|tool_call_begin|>",
        call_end="<|tool_call_end|>",
        body=partial(
            NamedJsonCall,
            args_start="<|tool_call_argument_begin|>",
            # `functions.NAME:N`, `NAME:N`, or a bare counter `N` (the request's tools name it).
            name_pattern=r"\s*(?:(?:functions\.)?(?P<name>[\w.\-]+):\d+|(?P<counter>\d+))\s*",
            args_end="<|tool_call_end|>",
            skip_unnamed=True,
            header_stops_at=("<|tool_call_begin|>", "<|tool_calls_section_begin|>", "<|tool_call_section_begin|>"),
        ),
        call_template=(
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{arguments}"
            "<|tool_call_end|><|tool_calls_section_end|>"
        ),
        dropped_markers=(
            "<|tool_calls_section_end|>",
            "<|tool_call_section_end|>",
            "<|tool_call_end|>",
            "<|tool_call_argument_begin|>",
        ),
        end_of_turn=("<|im_end|>",),
        needs_special_tokens=True,
        call_id_template="functions.{name}:{n}",
    )
)
