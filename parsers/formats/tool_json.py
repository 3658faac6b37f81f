"""Tool calls written as a JSON object between tag markers (FORMATS.md §1).

Wire format, one call and two calls::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>
    <tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>

`parameters` is accepted for `arguments`. Whitespace around the JSON is
free, so `<tool_call>{…}</tool_call>` and the newline form both parse.
"""

from dataclasses import replace

from parsers.registry import register
from parsers.tool_calls import ToolFormat

QWEN25 = ToolFormat(
    name="qwen25",
    models="Qwen2.5, Qwen3, QwQ and most Qwen-template fine-tunes",
    call_start="<tool_call>",
    call_end="</tool_call>",
    call_template='<tool_call>\n{"name": "{name}", "arguments": {arguments}}\n</tool_call>',
)
register(QWEN25, "qwen")
register(
    replace(
        QWEN25,
        name="hermes",
        models="NousResearch Hermes 2 Pro / 3 and generic Hermes templates",
        call_template='<tool_call>{"name": "{name}", "arguments": {arguments}}</tool_call>',
    )
)
register(
    replace(
        QWEN25,
        name="trinity",
        models="Arcee Trinity (Qwen template; stray <think> tags are removed)",
        dropped_markers=("<think>", "</think>"),
    )
)
