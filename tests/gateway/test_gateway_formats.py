"""Special-token formats through the real gateway: the backend is asked to
keep special tokens, Kimi K2 call ids follow the model's own numbering
(on Messages encoded to Anthropic's id pattern), and gpt-oss Harmony gives
reasoning and calls, streamed as not."""

from __future__ import annotations

import re

import pytest

from tests.sdk_clients import anthropic_client

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
SEARCH = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}
KIMI_TWO_CALLS = (
    "<think>Two lookups.</think><|tool_calls_section_begin|>"
    '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
    '<|tool_call_begin|>functions.search:1<|tool_call_argument_begin|>{"query": "x"}<|tool_call_end|>'
    "<|tool_calls_section_end|><|im_end|>"
)
HISTORY = [
    {"role": "user", "content": "Weather in Rome and Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "functions.get_weather:0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            },
            {
                "id": "functions.get_weather:1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "sunny"},
    {"role": "tool", "tool_call_id": "functions.get_weather:1", "content": "rain"},
    {"role": "user", "content": "And Paris?"},
]
# HISTORY on Messages, its calls' ids as the gateway sent them there
MESSAGES_HISTORY = [
    {"role": "user", "content": "Weather in Rome and Oslo?"},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": f"toolu_enc_functions-2Eget_weather-3A{n}", "name": "get_weather", "input": {}}
            for n in (0, 1)
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_enc_functions-2Eget_weather-3A0", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "toolu_enc_functions-2Eget_weather-3A1", "content": "rain"},
            {"type": "text", "text": "And Paris?"},
        ],
    },
]
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")  # what Anthropic's API takes as a tool_use id
HARMONY = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"city": "Paris"}<|call|>'
)


def streamed(client, **request) -> tuple[str, str, list[tuple[str, str, str]], str]:
    reasoning, content, calls, finish = "", "", {}, None
    for chunk in client.chat.completions.create(stream=True, **request):
        for choice in chunk.choices:
            delta = choice.delta
            reasoning += getattr(delta, "reasoning_content", None) or ""
            content += delta.content or ""
            for call in delta.tool_calls or ():
                if call.index not in calls:
                    calls[call.index] = [call.id, call.function.name, ""]
                calls[call.index][2] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    return reasoning, content, [tuple(calls[i]) for i in sorted(calls)], finish


def test_kimi_ids_count_the_conversations_earlier_calls(client, fake):
    fake.script(KIMI_TWO_CALLS, chunk_size=3)
    request = {"model": "kimi", "messages": HISTORY, "tools": [WEATHER, SEARCH]}
    reply = client.chat.completions.create(**request)
    message = reply.choices[0].message
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("functions.get_weather:2", "get_weather", '{"city": "Paris"}'),
        ("functions.search:3", "search", '{"query": "x"}'),
    ]
    assert message.reasoning_content == "Two lookups."
    assert message.content is None and reply.choices[0].finish_reason == "tool_calls"
    assert streamed(client, **request) == (
        "Two lookups.",
        "",
        [
            ("functions.get_weather:2", "get_weather", '{"city": "Paris"}'),
            ("functions.search:3", "search", '{"query": "x"}'),
        ],
        "tool_calls",
    )


def test_kimi_ids_on_messages_are_encoded_to_anthropic_s_pattern(gateway_url, fake):
    claude = anthropic_client(gateway_url)
    fake.script(KIMI_TWO_CALLS, chunk_size=3)
    request = {
        "model": "kimi",
        "max_tokens": 100,
        "messages": MESSAGES_HISTORY,
        "tools": [
            {"name": tool["function"]["name"], "input_schema": tool["function"]["parameters"]}
            for tool in (WEATHER, SEARCH)
        ],
    }
    with claude.messages.stream(**request) as events:
        streamed = events.get_final_message()
    assert fake.last_body["messages"][1]["tool_calls"][1]["id"] == "functions.get_weather:1"
    assert fake.last_body["messages"][3]["tool_call_id"] == "functions.get_weather:1"
    whole = claude.messages.create(**request)
    for message in (streamed, whole):
        calls = [(block.id, block.name, block.input) for block in message.content if block.type == "tool_use"]
        assert calls == [
            ("toolu_enc_functions-2Eget_weather-3A2", "get_weather", {"city": "Paris"}),
            ("toolu_enc_functions-2Esearch-3A3", "search", {"query": "x"}),
        ]
        assert all(ANTHROPIC_ID.fullmatch(call_id) for call_id, _, _ in calls)
        assert message.stop_reason == "tool_use"


def test_special_token_formats_ask_the_backend_to_keep_them(client, fake):
    fake.script("Hi.", chunk_size=2)
    client.chat.completions.create(model="kimi", messages=HISTORY, tools=[WEATHER])
    assert fake.last_body["skip_special_tokens"] is False
    client.chat.completions.create(model="qwen3", messages=HISTORY, tools=[WEATHER])
    assert "skip_special_tokens" not in fake.last_body


def test_client_choice_of_skip_special_tokens_is_kept(client, fake):
    fake.script("Hi.", chunk_size=2)
    client.chat.completions.create(
        model="kimi", messages=HISTORY, tools=[WEATHER], extra_body={"skip_special_tokens": True}
    )
    assert fake.last_body["skip_special_tokens"] is True


@pytest.mark.parametrize("chunk_size", [1, 5, 1000])
def test_gpt_oss_harmony_reasoning_and_call(client, fake, chunk_size):
    fake.script(HARMONY, chunk_size=chunk_size)
    request = {"model": "gpt-oss", "messages": HISTORY, "tools": [WEATHER]}
    reasoning, content, calls, finish = streamed(client, **request)
    assert (reasoning, content, finish) == ("Need the weather.", "", "tool_calls")
    assert [(name, arguments) for _, name, arguments in calls] == [("get_weather", '{"city": "Paris"}')]
    message = client.chat.completions.create(**request).choices[0].message
    assert message.reasoning_content == "Need the weather."
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("get_weather", '{"city": "Paris"}')
    ]


def test_end_of_turn_tokens_never_reach_content_even_without_tools(client, fake):
    fake.script("<think>Easy.</think>Paris.<|im_end|>", chunk_size=2)
    request = {"model": "qwen3", "messages": HISTORY}
    message = client.chat.completions.create(**request).choices[0].message
    assert (message.reasoning_content, message.content) == ("Easy.", "Paris.")
    assert streamed(client, **request) == ("Easy.", "Paris.", [], "stop")


def test_gpt_oss_without_separate_reasoning_keeps_analysis_as_content_without_markers(client, fake):
    """With reasoning not separated, the gpt-oss tool-call parser still reads
    Harmony's messages: the analysis text is content, no marker reaches it."""
    fake.script(HARMONY + "<|start|>assistant<|channel|>final<|message|> Sunny.<|return|>", chunk_size=4)
    request = {
        "model": "gpt-oss",
        "messages": HISTORY,
        "tools": [WEATHER],
        "extra_body": {"separate_reasoning": False},
    }
    message = client.chat.completions.create(**request).choices[0].message
    assert (message.reasoning_content, message.content) == (None, "Need the weather. Sunny.")
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("get_weather", '{"city": "Paris"}')
    ]
    reasoning, content, calls, finish = streamed(client, **request)
    assert (reasoning, content, finish) == ("", "Need the weather. Sunny.", "tool_calls")
    assert [(name, arguments) for _, name, arguments in calls] == [("get_weather", '{"city": "Paris"}')]


def test_gpt_oss_without_tools_or_separate_reasoning_keeps_no_harmony_markers(client, fake):
    """A request without tools reads no calls, but Harmony's framing is
    still the model's: its markers never reach the content."""
    fake.script(
        "<|channel|>analysis<|message|>Greeting.<|end|><|start|>assistant<|channel|>final<|message|> Hi!<|return|>",
        chunk_size=3,
    )
    request = {"model": "gpt-oss", "messages": HISTORY, "extra_body": {"separate_reasoning": False}}
    message = client.chat.completions.create(**request).choices[0].message
    assert fake.last_body["skip_special_tokens"] is False  # the markers must reach the framing
    assert (message.reasoning_content, message.content, message.tool_calls) == (None, "Greeting. Hi!", None)
    assert streamed(client, **request) == ("", "Greeting. Hi!", [], "stop")
