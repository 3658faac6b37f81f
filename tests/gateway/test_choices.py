"""n > 1 through the real gateway: every choice has its own parser state,
its own call indexes from 0 and its own finish, streamed and not."""

from __future__ import annotations

import json

import pytest

from tests.gateway.test_gateway_e2e import (
    MESSAGES,
    ONE_CALL,
    THINK_THEN_ANSWER,
    TOOLS,
    TWO_CALLS,
    collect,
    message_result,
    streamed_result,
)


@pytest.mark.parametrize("together", [False, True], ids=["chunk-per-choice", "choices-in-one-chunk"])
def test_each_choice_is_parsed_on_its_own(client, fake, together):
    fake.together = together
    fake.script(TWO_CALLS, THINK_THEN_ANSWER, ONE_CALL, chunk_size=3)
    request = {"model": "qwen3", "messages": MESSAGES, "tools": TOOLS, "n": 3}
    whole = client.chat.completions.create(**request).choices
    streamed = collect(client.chat.completions.create(stream=True, **request))
    assert [choice.index for choice in whole] == [0, 1, 2] and sorted(streamed) == [0, 1, 2]
    assert [message_result(choice) for choice in whole] == [streamed_result(streamed[i]) for i in range(3)]
    first, second, third = (message_result(choice) for choice in whole)
    assert [name for name, _ in first["tool_calls"]] == ["get_weather", "get_time"]
    assert sorted(streamed[0]["calls"]) == [0, 1] and sorted(streamed[2]["calls"]) == [0]
    assert second["tool_calls"] == [] and second["content"].strip() == "Paris is sunny today."
    assert third["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert [r["finish_reason"] for r in (first, second, third)] == ["tool_calls", "stop", "tool_calls"]
    ids = [call["id"] for state in streamed.values() for call in state["calls"].values()]
    assert len(set(ids)) == len(ids) == 3
    assert fake.last_body["n"] == 3


def test_reasoning_state_is_per_choice(client, fake):
    fake.script("<think>Hmm.</think>Done.", "Plain reply, no markers at all.", chunk_size=4)
    request = {
        "model": "qwen3",
        "messages": MESSAGES,
        "n": 2,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
    }
    streamed = collect(client.chat.completions.create(stream=True, **request))
    assert streamed[0]["reasoning"] == "Hmm." and streamed[0]["content"] == "Done."
    assert streamed[1]["content"] == "Plain reply, no markers at all." and streamed[1]["reasoning"] == ""


def test_call_indexes_restart_at_zero_in_every_choice(client, fake):
    fake.script(TWO_CALLS, TWO_CALLS, chunk_size=1)
    stream = client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS, n=2, stream=True)
    streamed = collect(stream)
    for index in (0, 1):
        calls = streamed[index]["calls"]
        assert sorted(calls) == [0, 1]
        assert json.loads(calls[1]["arguments"]) == {"zone": "Europe/Paris", "format": "24h"}
