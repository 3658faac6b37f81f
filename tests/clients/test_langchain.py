"""LangChain's `ChatOpenAI` (langchain-openai) pointed at the gateway, as an
agent would use it: tools bound with `bind_tools`, `invoke` and `stream`.
Streamed tool-call chunks must merge (`chunk + chunk`) into the right calls."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_openai import ChatOpenAI

from tests.clients.test_js_clients import CALLS, THREE_CALLS
from tests.gateway.test_gateway_e2e import TOOLS

QUESTION = "Weather in Paris and Rome, and the time in Paris?"


@pytest.fixture(scope="module")
def llm(gateway_url: str):
    chat = ChatOpenAI(model="qwen3", base_url=f"{gateway_url}/v1", api_key="unused", max_retries=0, timeout=10)
    return chat.bind_tools(TOOLS)


def test_langchain_invoke_returns_every_parallel_call(llm, fake):
    fake.script(THREE_CALLS)
    message = llm.invoke(QUESTION)
    assert [(call["name"], call["args"]) for call in message.tool_calls] == CALLS
    assert len({call["id"] for call in message.tool_calls}) == 3
    assert message.response_metadata["finish_reason"] == "tool_calls"
    assert message.invalid_tool_calls == []


@pytest.mark.parametrize("chunk_size", [2, 7])
def test_langchain_stream_merges_tool_call_chunks_into_the_right_calls(llm, fake, chunk_size):
    fake.script(THREE_CALLS, chunk_size=chunk_size)
    merged: AIMessageChunk | None = None
    chunks = 0
    for chunk in llm.stream(QUESTION):
        merged = chunk if merged is None else merged + chunk
        chunks += 1
    assert chunks > 3  # it really streamed
    assert [(call["name"], call["args"]) for call in merged.tool_calls] == CALLS
    assert [call["index"] for call in merged.tool_call_chunks] == [0, 1, 2]
    assert all(call["id"].startswith("call_") for call in merged.tool_calls)
    assert merged.invalid_tool_calls == []
    assert merged.response_metadata["finish_reason"] == "tool_calls"
