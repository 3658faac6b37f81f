"""Declarative response templates (transformers' `response_template`) and
outputs written for them, shared by the parser and gateway tests."""

from __future__ import annotations

from transformers.cli.serving import utils as serving

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

# The Qwen 3.5 shape as transformers ships it: <function=NAME><parameter=KEY>VALUE</parameter> in <tool_call>.
QWEN35 = {k[0]: v for k, v in serving._RESPONSE_TEMPLATE_FALLBACKS.items()}["qwen3_5"]

# A tag shape of our own: the name after the call marker, values kept as written (no \s* around them).
TAGGED = {
    "start_anchor": "<bot>",
    "fields": {
        "reasoning_content": {"open": "<reason>", "close": "</reason>"},
        "tool_calls": {
            "open_pattern": r"<call>(?P<name>[\w.]+)\s*:",
            "close": "</call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<arg (?P<key>\w+)>(?P<value>.*?)</arg>"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<eot>"},
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
QWEN35_OUTPUTS = [
    "<think>\nNeed weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call><|im_end|>",
    "Sure.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n 7 \n</parameter>\n<parameter=metric>\nTrue\n"
    '</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=web.search>\n<parameter=q>\na <b> & "c"\nline2\n'
    "</parameter>\n</function>\n</tool_call><|im_end|>\n<|endoftext|>",
    '<tool_call><function=set_alarm><parameter=repeat>[1, "x"]</parameter><parameter=options>{"a": 1}</parameter>'
    "<parameter=snooze>null</parameter><parameter=days>x</parameter><parameter=at>0730</parameter></function></tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=city>\nRome\n</parameter>\n"
    "</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>",
    '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>',
    "No tools. <function=get_weather> stays text.<|im_end|>",
]
TAGGED_OUTPUTS = [
    "<reason> r </reason>Hi <call>get_weather:<arg city> Paris </arg><arg days>4</arg></call>"
    "<call>web.search :<arg q>a\nb</arg></call><eot>",
    "<call>set_alarm:\n<arg at>12</arg>\n<arg label>None</arg>\n</call>",
    "text <call>bad name!:<arg q>x</arg></call> more",
]
