"""Gemma 4 tool calls (docs/parsers.md `gemma4`): `call:NAME{…}` between
special tokens, with `<|"|>` around strings; two calls are two blocks::

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>
    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|tool_call>call:search{query:<|"|>x<|"|>,tags:[<|"|>a<|"|>]}<tool_call|>

Every call gets its own index (SGLang gives two calls to one tool the same).
A block written `call:NAME:` with `BEGIN_ARG:` … `END_ARG` blocks is read
too (`parsers.grammars.gemma4_begin_arg`)::

    <|tool_call>call:get_weather:
    BEGIN_ARG:
    Paris
    END_ARG
    <tool_call|>

A turn of calls ends with `<|tool_response>`, where the tool's answer goes
(Gemma 4's chat template writes it after a turn's last call): an end-of-turn
token, never content.
"""

from parsers.formats.table import register
from parsers.grammars.gemma4_begin_arg import Gemma4Body
from parsers.grammars.gemma4_call import render_gemma4
from parsers.stages.tool_calls import ToolFormat

register(
    ToolFormat(
        name="gemma4",
        models="Google Gemma 4",
        call_start="<|tool_call>",
        call_end="<tool_call|>",
        body=Gemma4Body,
        call_template="<|tool_call>call:{name}{arguments}<tool_call|>",
        render_arguments=render_gemma4,
        dropped_markers=("<tool_call|>",),
        end_of_turn=("<|tool_response>",),
        needs_special_tokens=True,
    )
)
