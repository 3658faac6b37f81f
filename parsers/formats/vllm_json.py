"""Tool-call formats that only vLLM parses, whose calls are JSON call
objects `{"name": …, "arguments": {…}}` (or arrays of them) after a marker.
Names are vLLM's `--tool-call-parser` names.

IBM Granite 3.0 / 3.1 (`granite`): one JSON array, after `<|tool_call|>`
(3.0), `<tool_call>` (3.1) or nothing at the start of the output::

    <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]
    [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "x"}}]

granite-20b-functioncalling (`granite-20b-fc`): one marker per call::

    <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}
    <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}} <function_call> {"name": "search", "arguments": {"query": "x"}}

InternLM 2 / 2.5 (`internlm`; `parameters` for `arguments`)::

    <|action_start|><|plugin|>
    {"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>

AI21 Jamba (`jamba`) and Tencent Hunyuan-A13B (`hunyuan_a13b`): one array::

    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "x"}}]</tool_calls>

Salesforce xLAM (`xlam`): a JSON array, bare at the start of the output
or after a `<think>…</think>` block (content as written), in a
```` ```json ```` fence, in `<tool_call>` tags or after `[TOOL_CALLS]`::

    [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    Checking.```json
    [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    ```

Phi-4-mini (`phi4_mini_json`): `functools` then an array::

    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "x"}}]

Meituan LongCat-Flash (`longcat`), Hermes-style tags under its own name::

    <longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</longcat_tool_call>

MiniMax-M1 (`minimax`): one call object a line; a `<think>` block is
content as written (the reasoning stage takes it out when one is paired)::

    <tool_calls>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    {"name": "search", "arguments": {"query": "x"}}
    </tool_calls>

Baidu ERNIE 4.5 (`ernie45`), Hermes-style::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>
"""

from dataclasses import replace
from functools import partial

from parsers.formats.table import register
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.json_call_lines import JsonCallLines
from parsers.stages.tool_calls import ToolFormat

_ARRAY = '[{"name": "{name}", "arguments": {arguments}}]'
_OBJECT = '{"name": "{name}", "arguments": {arguments}}'

register(
    ToolFormat(
        name="granite",
        models="IBM Granite 3.0 / 3.1 / 3.2 / 3.3 Instruct",
        call_start="<|tool_call|>",
        other_call_starts=("<tool_call>",),
        call_end="",
        bare_start="[",
        body=JsonCalls,
        call_template="<|tool_call|>" + _ARRAY,
        end_of_turn=("<|end_of_text|>",),
    )
)
register(
    ToolFormat(
        name="granite-20b-fc",
        models="IBM granite-20b-functioncalling",
        call_start="<function_call>",
        call_end="",
        body=JsonCalls,
        call_template="<function_call> " + _OBJECT,
        end_of_turn=("<|endoftext|>",),
    )
)
register(
    ToolFormat(
        name="internlm",
        models="InternLM 2 / 2.5 chat",
        call_start="<|action_start|><|plugin|>",
        other_call_starts=("<|action_start|> <|plugin|>",),
        call_end="<|action_end|>",
        # vLLM's InternLM 2 tool template writes `arguments|string`: a Python dict.
        body=partial(JsonCalls, python_arguments=True),
        call_template='<|action_start|><|plugin|>\n{"name": "{name}", "parameters": {arguments}}<|action_end|>',
        dropped_markers=("<|action_end|>",),
        end_of_turn=("<|im_end|>",),
        needs_special_tokens=True,
    )
)
JAMBA = ToolFormat(
    name="jamba",
    models="AI21 Jamba 1.5 / 1.6 / 1.7",
    call_start="<tool_calls>",
    call_end="</tool_calls>",
    body=JsonCalls,
    call_template="<tool_calls>" + _ARRAY + "</tool_calls>",
    dropped_markers=("</tool_calls>",),
    needs_special_tokens=True,
)
register(JAMBA)
register(
    replace(
        JAMBA,
        name="hunyuan_a13b",
        models="Tencent Hunyuan-A13B-Instruct",
        end_of_turn=("<|eos|>",),
        needs_special_tokens=False,
    )
)
register(
    ToolFormat(
        name="xlam",
        models="Salesforce Llama-xLAM-2 / xLAM-2 (Qwen) function-calling models",
        call_start="```json",
        # vLLM's xLAM parser also reads a `[TOOL_CALLS]` array, and strips the
        # newline before a fence from the content.
        other_call_starts=("\n```json", "<tool_call>", "[TOOL_CALLS]"),
        call_end="```",
        bare_start="[",
        body=JsonCalls,
        call_template="```json\n" + _ARRAY + "\n```",
        dropped_markers=("</tool_call>",),
        passthrough_blocks=(("<think>", "</think>"),),
    )
)
register(
    ToolFormat(
        name="phi4_mini_json",
        models="Microsoft Phi-4-mini-instruct",
        call_start="functools",
        call_end="",
        body=JsonCalls,
        call_template="functools" + _ARRAY,
        end_of_turn=("<|end|>",),
    )
)
register(
    ToolFormat(
        name="longcat",
        models="Meituan LongCat-Flash-Chat / -Thinking",
        call_start="<longcat_tool_call>",
        call_end="</longcat_tool_call>",
        body=JsonCalls,
        call_template="<longcat_tool_call>" + _OBJECT + "</longcat_tool_call>",
        dropped_markers=("</longcat_tool_call>",),
    )
)
register(
    ToolFormat(
        name="ernie45",
        models="Baidu ERNIE-4.5 (-Thinking) chat models",
        call_start="<tool_call>",
        call_end="</tool_call>",
        body=JsonCalls,
        call_template="<tool_call>\n" + _OBJECT + "\n</tool_call>",
        dropped_markers=("</tool_call>",),
    )
)
register(
    ToolFormat(
        name="minimax",
        models="MiniMax-M1-40k / -80k",
        call_start="<tool_calls>",
        call_end="</tool_calls>",
        body=JsonCallLines,
        call_template="<tool_calls>\n" + _OBJECT + "\n</tool_calls>",
        dropped_markers=("</tool_calls>",),
        passthrough_blocks=(("<think>", "</think>"),),
    )
)
