"""The conversation history as the backend receives it: earlier reasoning
under both names, tool call ids and tool_call_ids exactly as the client
sent them (real gateway, official `openai` client)."""

from __future__ import annotations

import pytest

from tests.gateway.test_gateway_e2e import ONE_CALL, TOOLS

CALL = {
    "id": "call_Ab12cD34eF56",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
}
KIMI_CALL = {"id": "functions.get_time:1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Rome, and the time?"},
    {"role": "assistant", "content": None, "reasoning_content": "Two tools.", "tool_calls": [CALL, KIMI_CALL]},
    {"role": "tool", "tool_call_id": "call_Ab12cD34eF56", "content": "sunny"},
    {"role": "tool", "tool_call_id": "functions.get_time:1", "content": "12:00"},
    {"role": "assistant", "content": "Sunny, noon.", "reasoning": "Both answered."},
    {"role": "user", "content": "And Paris?"},
]


@pytest.mark.parametrize("stream", [False, True])
def test_earlier_reasoning_goes_up_under_both_names(client, fake, stream):
    fake.script(ONE_CALL)
    result = client.chat.completions.create(model="qwen3", messages=HISTORY, tools=TOOLS, stream=stream)
    if stream:
        list(result)
    sent = fake.last_body["messages"]
    assert sent[2]["reasoning_content"] == sent[2]["reasoning"] == "Two tools."
    assert sent[5]["reasoning_content"] == sent[5]["reasoning"] == "Both answered."
    assert sent[5]["content"] == "Sunny, noon."
    unchanged = [0, 1, 3, 4, 6]
    assert [sent[i] for i in unchanged] == [HISTORY[i] for i in unchanged]


def test_tool_call_ids_in_the_history_are_kept(client, fake):
    fake.script(ONE_CALL)
    client.chat.completions.create(model="qwen3", messages=HISTORY, tools=TOOLS)
    sent = fake.last_body["messages"]
    assert sent[2]["tool_calls"] == [CALL, KIMI_CALL]
    assert [sent[3]["tool_call_id"], sent[4]["tool_call_id"]] == ["call_Ab12cD34eF56", "functions.get_time:1"]


def test_a_history_without_reasoning_goes_up_as_sent(client, fake):
    plain = [message for message in HISTORY if "reasoning" not in message and "reasoning_content" not in message]
    both = {"role": "assistant", "content": "Hi.", "reasoning": "a", "reasoning_content": "b"}
    messages = [*plain, both, {"role": "user", "content": "Again?"}]
    client.chat.completions.create(model="qwen3", messages=messages)
    assert fake.last_body["messages"] == messages
