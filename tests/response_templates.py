"""Declarative response templates (transformers' `response_template`) and
outputs written for them, shared by the parser and gateway tests."""

from __future__ import annotations

# The Qwen3 shape: <think>, then JSON call objects between <tool_call> tags.
QWEN3 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", "content": "text"},
    },
}

# A Kimi-like shape: the function named in the opening marker, JSON arguments as the body.
NAMED = {
    "start_anchor": "<|im_assistant|>assistant<|im_middle|>",
    "fields": {
        "reasoning_content": {"open": ["<think>", "<reason>"], "close": ["</think>", "</reason>"]},
        "tool_calls": {
            "open_pattern": r"<\|tool_call_begin\|>(?P<name>[\w.\-]+)<\|tool_call_argument_begin\|>",
            "close": "<|tool_call_end|>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": ["<|im_end|>"]},
    },
}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"}},
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {"name": "web.search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
}
ALARM = {
    "type": "function",
    "function": {
        "name": "set_alarm",
        "parameters": {
            "type": "object",
            "properties": {
                "at": {"type": ["string", "integer"]},
                "snooze": {"type": "number", "nullable": True},
                "label": {"anyOf": [{"type": "null"}, {"type": "string"}]},
                "repeat": {"type": "array"},
                "options": {"type": "object"},
                "days": {"type": "integer"},
            },
        },
    },
}
TOOLS = [WEATHER, SEARCH, ALARM]

QWEN3_OUTPUTS = [
    "<think>\nThe user wants weather.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call><|im_end|>',
    '<think>Two lookups: 東京 and "Nice".</think>Let me check both.\n\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "東京", "metric": true}}\n</tool_call>\n'
    '<tool_call>\n{"name": "web.search", "arguments": {"q": "a <tool_call> in a string"}}\n</tool_call>',
    "<think>\nNo tool needed.\n</think>\n\nIt is 4 < 5 and </think> stays.<|im_end|>",
    "Plain answer, no reasoning at all.\n<|endoftext|>",
    "<think>cut off while thinking",
    # String arguments cast to the declared types; a string parameter keeps "7".
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "7", "days": " 3 ", "metric": "True"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "set_alarm", "arguments": {"at": "0730", "snooze": "1e3", "label": "None", '
    '"repeat": "[1, \\"mon\\"]", "options": "{\\"loud\\": true}", "days": ["1", "x", 2.50, "4.0"]}}\n</tool_call>',
    '<tool_call>{"name": "set_alarm", "arguments": {"at": "x7", "snooze": "null", "label": "null", '
    '"repeat": "not json", "options": "[]", "days": "2.5", "extra": "7"}}</tool_call>',
]
NAMED_OUTPUTS = [
    "<think> Need weather. </think>Sure."
    '<|tool_call_begin|>get_weather<|tool_call_argument_begin|>{"city": "Oslo", "days": 2}<|tool_call_end|>'
    '<|tool_call_begin|>web.search<|tool_call_argument_begin|>{"q": "x"}<|tool_call_end|><|im_end|>',
    "<reason>other spelling</reason>\n"
    '<|tool_call_begin|>get_weather<|tool_call_argument_begin|>{"city": "Rome"}<|tool_call_end|>',
    "<|tool_call_begin|> is text until a name follows? no: <|tool_call_end|> Just text.<|im_end|>",
    '<|tool_call_begin|>get_weather<|tool_call_argument_begin|>{"days": "\\u0034", "metric": "0", '
    '"city": "true"}<|tool_call_end|>'
    '<|tool_call_begin|>set_alarm<|tool_call_argument_begin|>{ "snooze" : "2.0" , "days": "-1E2" }<|tool_call_end|>',
]
