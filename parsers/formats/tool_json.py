"""Tool calls written as a JSON object between tag markers (docs/parsers.md).

Wire format, one call and two calls::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>
    <tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>

`parameters` is accepted for `arguments`. Whitespace around the JSON is
free, so `<tool_call>{…}</tool_call>` and the newline form both parse.
"""

from dataclasses import replace

from parsers.formats.table import register
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.unmarked_json import FENCE_OPEN, UnmarkedJsonCalls
from parsers.stages.tool_calls import ToolFormat

QWEN25 = ToolFormat(
    name="qwen25",
    models="Qwen2.5, Qwen3, QwQ and most Qwen-template fine-tunes",
    call_start="<tool_call>",
    call_end="</tool_call>",
    body=JsonCalls,
    call_template='<tool_call>\n{"name": "{name}", "arguments": {arguments}}\n</tool_call>',
    end_of_turn=("<|im_end|>", "<|endoftext|>"),
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

register(
    ToolFormat(
        name="interns1",
        models="InternLM2 / 2.5 chat, Intern-S1",
        call_start="<|action_start|> <|plugin|>",
        call_end="<|action_end|>",
        body=JsonCalls,
        call_template='<|action_start|> <|plugin|>\n{"name": "{name}", "parameters": {arguments}}<|action_end|>',
        dropped_markers=("<|action_end|>",),
        end_of_turn=("<|im_end|>",),
        needs_special_tokens=True,
    )
)
register(
    ToolFormat(
        name="gigachat3",
        models="GigaChat 3",
        call_start="function call<|role_sep|>",
        other_call_starts=("<|function_call|>",),
        call_end="",
        body=JsonCalls,
        call_template='<|message_sep|>function call<|role_sep|>\n{"name": "{name}", "arguments": {arguments}}',
        dropped_markers=("<|message_sep|>",),
        end_of_turn=("</s>",),
        needs_special_tokens=True,
    )
)
LLAMA3 = ToolFormat(
    name="llama3",
    models="Llama 3.1 / 3.2 / 3.3 (JSON tool calling)",
    call_start="<|python_tag|>",
    call_end="",
    bare_start="{",
    unmarked_starts=("{", FENCE_OPEN),
    call_separator=";",
    body=UnmarkedJsonCalls,
    call_template='<|python_tag|>{"name": "{name}", "parameters": {arguments}}',
    end_of_turn=("<|eom_id|>", "<|eot_id|>"),
    needs_special_tokens=True,
)
register(LLAMA3, "llama3_json")
