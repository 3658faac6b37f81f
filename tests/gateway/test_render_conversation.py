"""A render worker holds the conversation and the tools of its last job,
and is sent only the messages after those a request starts with, and the
tools when they differ (prompt_render.RenderJob); it writes the tools'
JSON once while they stay (chat_template.RememberedJson). Whatever the
requests before it, each prompt is the one the request alone renders
in-process: an agent's growing turns, an earlier message changed, a
shorter conversation (a compaction), other tools or none, another
template (one writing each tool's JSON, one the whole list's), a compile
in between, and the tool-call arguments' other form."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.templates.chat_messages import RememberedMessages, template_messages
from gateway.templates.chat_template import ChatTemplate, RememberedJson, _tojson
from gateway.templates.prompt_render import render_prompt
from gateway.templates.render_pool import RenderPool

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
QWEN3 = TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
DEEPSEEK = TEMPLATES / "deepseek-ai-DeepSeek-V3.1.jinja"  # renders calls' arguments as the request's text
KIMI = TEMPLATES / "moonshotai-Kimi-K2-Instruct.jinja"  # writes `tools | tojson`, the whole list


def _turn(index: int) -> list[dict]:
    call = {"id": f"c{index}", "type": "function", "function": {"name": "sh", "arguments": f'{{"n": {index}}}'}}
    return [
        {"role": "assistant", "content": f"step {index}", "tool_calls": [call], "reasoning_content": "hm"},
        {"role": "tool", "tool_call_id": f"c{index}", "content": f"output {index} é"},
    ]


def _tools(name: str = "sh") -> list[dict]:
    schema = {"type": "object", "properties": {"command": {"type": "string", "description": "ünïcode"}}}
    return [{"type": "function", "function": {"name": name, "parameters": schema}}, _tool_named("read")]


def _tool_named(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": "Reads a file."}}


def _chat(messages: list[dict], **extra: object) -> dict:
    return {"messages": messages, "tools": _tools(), **extra}


START = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "List the files."}]


def _requests() -> list[tuple[str, dict | None]]:
    """(template, request; None: a compile) in the order they are sent."""
    history = list(START)
    sent: list[tuple[str, dict | None]] = []
    for index in range(4):  # an agent's turns, each its conversation so far and one more turn
        history += _turn(index)
        sent.append(("qwen3", _chat(copy.deepcopy(history))))
    sent.append(("qwen3", _chat(copy.deepcopy(history))))  # the same again
    sent.append(("kimi", _chat(copy.deepcopy(history))))  # the same tools, written as one list
    sent.append(("qwen3", _chat(copy.deepcopy(history), tools=_tools("bash"))))  # other tools
    sent.append(("qwen3", {"messages": copy.deepcopy(history)}))  # none
    sent.append(("kimi", _chat(copy.deepcopy(history))))
    sent.append(("kimi", _chat(copy.deepcopy(history), tools=[_tool_named("read")])))
    changed = copy.deepcopy(history)
    changed[3]["content"] = "output 0, edited"  # an earlier message differs
    sent.append(("qwen3", _chat(changed)))
    sent.append(("qwen3", _chat([*copy.deepcopy(START), {"role": "user", "content": "Summary so far."}])))
    sent.append(("deepseek", None))
    sent.append(("deepseek", _chat(copy.deepcopy(history), chat_template_kwargs={"thinking": True})))
    sent.append(("qwen3", _chat(copy.deepcopy(history), add_generation_prompt=False)))
    sent.append(("qwen3", _chat([{"role": "user", "content": "Hi"}])))
    return sent


def test_each_prompt_is_the_one_its_request_renders_alone_whatever_the_worker_held():
    templates = {
        "qwen3": ChatTemplate(QWEN3.read_text(), eos_token="<|im_end|>", where=QWEN3.name),
        "deepseek": ChatTemplate(
            DEEPSEEK.read_text(),
            bos_token="<｜begin▁of▁sentence｜>",
            eos_token="<｜end▁of▁sentence｜>",
            where=DEEPSEEK.name,
        ),
        "kimi": ChatTemplate(KIMI.read_text(), bos_token="[BOS]", eos_token="[EOS]", where=KIMI.name),
    }
    alone = {
        index: render_prompt(ChatTemplate(dict(templates[name].sources), **_tokens(templates[name])), chat)
        for index, (name, chat) in enumerate(_requests())
        if chat is not None
    }

    async def scenario() -> None:
        pool = RenderPool(workers=1, timeout=60, max_prompt_chars=1_000_000)
        try:
            for index, (name, chat) in enumerate(_requests()):
                if chat is None:
                    await pool.compile(templates[name], name)
                else:
                    assert await pool.render(templates[name], chat, name) == alone[index], index
        finally:
            await pool.close()

    asyncio.run(scenario())


def _tokens(template: ChatTemplate) -> dict:
    return {"bos_token": template.bos_token, "eos_token": template.eos_token, "where": template.where}


_MESSAGES = st.lists(st.sampled_from([*START, *_turn(0), *_turn(1), {"role": "assistant", "content": None}]))


@settings(max_examples=60)
@given(calls=st.lists(st.tuples(st.integers(0, 6), _MESSAGES, st.booleans()), max_size=8))
def test_remembered_messages_are_made_as_template_messages_makes_them(calls):
    """Each call keeps a prefix of the last call's message objects (the
    worker's conversation) and adds copies of others."""
    remembered = RememberedMessages()
    last: list[dict] = []
    for kept, added, text_arguments in calls:
        messages = last[:kept] + copy.deepcopy(added)
        assert remembered(messages, text_arguments=text_arguments) == template_messages(
            messages, text_arguments=text_arguments
        )
        last = messages


def test_remembered_json_writes_what_tojson_writes_and_remembers_only_what_it_keeps():
    tools = _tools()
    other = {"changing": [1]}
    tojson = RememberedJson()
    tojson.keep(tools)
    for _ in range(2):
        assert tojson(tools) == _tojson(tools) and tojson(tools[0]) == _tojson(tools[0])
        assert tojson(tools[0], indent=2) == json.dumps(tools[0], ensure_ascii=False, indent=2)
        assert tojson(other) == _tojson(other)
        other["changing"].append(2)  # not kept: written afresh each time
    assert tojson(other) == '{"changing": [1, 2, 2]}'
