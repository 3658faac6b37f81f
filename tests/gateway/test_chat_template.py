"""parsegate's chat template renderer against transformers' own.

Every real template in tests/fixtures/chat_templates renders every
conversation below through parsegate (`ChatTemplate.render`, OpenAI-shaped
messages in) and through transformers (`render_jinja_template`, called as
`apply_chat_template` calls it, on the messages as vLLM's serving layer
hands them over). The two prompts must be equal byte for byte; where
transformers raises, parsegate must raise too, unless the template renders
with the tool-call arguments as the request's JSON text (DeepSeek V3.1 and
R1, functionary v3.2), as llama.cpp renders those templates.
"""

from __future__ import annotations

import copy
import functools
import json
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("transformers")
from transformers.utils import chat_template_utils as hf

from gateway.templates import chat_template as pg
from gateway.templates.chat_messages import template_messages
from gateway.templates.chat_template import (
    ChatTemplate,
    ChatTemplateError,
    prompt_opens_reasoning,
)
from gateway.templates.sources import load_chat_template

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"

# Each fixture's BOS and EOS texts, as its model's tokenizer_config.json has them.
MODELS = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": (None, "<|im_end|>"),
    "Qwen-Qwen3-0.6B.jinja": (None, "<|im_end|>"),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("<s>", "</s>"),
    "mistralai-Mistral-Small-3.2-24B-Instruct-2506.jinja": ("<s>", "</s>"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": (
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
    ),
    "deepseek-ai-DeepSeek-V3.1.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>"),
    "zai-org-GLM-4.6.jinja": (None, "<|endoftext|>"),
    "openai-gpt-oss-120b.jinja": ("<|startoftext|>", "<|return|>"),
    "google-gemma-2-2b-it.jinja": ("<bos>", "<eos>"),
    "microsoft-Phi-3.5-mini-instruct.jinja": ("<s>", "<|endoftext|>"),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("<|end_of_text|>", "<|end_of_text|>"),
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "meetkai-functionary-medium-v3.2.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "Qwen-Qwen3-Coder-30B-A3B-Instruct.jinja": (None, "<|im_end|>"),
    "moonshotai-Kimi-K2-Instruct.jinja": ("[BOS]", "[EOS]"),
    "moonshotai-Kimi-K2-Thinking.jinja": ("[BOS]", "[EOS]"),
    "Qwen-QwQ-32B.jinja": (None, "<|im_end|>"),
    "Qwen3.5-4B.jinja": (None, "<|im_end|>"),
    "unsloth-mistral-Devstral-Small-2507.jinja": ("<s>", "</s>"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ("<s>", "</s>"),
    "deepseek-ai-DeepSeek-V3.2.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "GLM-4.7-Flash.jinja": (None, "<|endoftext|>"),
    "google-gemma-4-31B-it.jinja": ("<bos>", "<turn|>"),
    "ibm-granite-granite-4.0.jinja": (None, "<|end_of_text|>"),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "meetkai-functionary-medium-v3.1.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "MiniMax-M2.jinja": ("]~!b[", "[e~["),
    "ByteDance-Seed-OSS.jinja": ("<seed:bos>", "<seed:eos>"),
    "unsloth-Apriel-1.5.jinja": ("<s>", "<|end|>"),
    "LFM2-8B-A1B.jinja": ("<|startoftext|>", "<|im_end|>"),
    "LFM2.5-Instruct.jinja": ("<|startoftext|>", "<|im_end|>"),
    "MiMo-VL.jinja": (None, "<|im_end|>"),
    "stepfun-ai-Step-3.5-Flash.jinja": (None, "<|im_end|>"),
    "Apertus-8B-Instruct.jinja": ("<s>", "<|assistant_end|>"),
    "GigaChat3-10B-A1.8B.jinja": ("<s>", "</s>"),
    "NVIDIA-Nemotron-Nano-v2.jinja": (None, "<SPECIAL_12>"),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": (None, "<|im_end|>"),
    "Kimi-K2-Thinking.jinja": ("[BOS]", "[EOS]"),
    "Apriel-1.6-15b-Thinker-fixed.jinja": ("<s>", "<|end|>"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "fireworks-ai-llama-3-firefunction-v2.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "google-gemma-4-31B-it-interleaved.jinja": ("<bos>", "<turn|>"),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "GigaChat3.1-10B-A1.8B.jinja": ("<s>", "</s>"),
    "vllm-llama4-pythonic.jinja": ("<|begin_of_text|>", "<|eot|>"),
    "vllm-olmo3.jinja": (None, "<|im_end|>"),
    "vllm-xlam-llama.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "Kimi-K3.jinja": (None, "<|end_of_msg|>"),
    "MiniMax-M3.jinja": ("]~b]", "[e~["),
    "MiniMax-M1.jinja": (None, "<end_of_sentence>"),
    "muse-glimmer.jinja": (None, "<|eot|>"),
    "deepseek-ai-DeepSeek-V4.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "tencent-Hy3.jinja": ("<｜hy_begin_of_sentence:opensource｜>", "<｜hy_eos:opensource｜>"),
    "LFM2.5-8B-A1B.jinja": ("<|startoftext|>", "<|im_end|>"),
    "openbmb-MiniCPM5-1B.jinja": ("<s>", "<|im_end|>"),
    "poolside-Laguna-XS.2.jinja": ("〈|EOS|〉", "</assistant>"),
    "GigaChat3.5.jinja": ("<s>", "</s>"),
    "poolside-Laguna-S-2.1.jinja": ("〈|EOS|〉", "</assistant>"),
    "ibm-granite-granite-4.1.jinja": (None, "<|end_of_text|>"),
    "Cohere2MoE.jinja": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {
                    "type": "string",
                    "enum": ["celsius", "fahrenheit"],
                    "description": "Temperature unit",
                },
            },
            "required": ["city"],
        },
    },
}
WRITE = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write text to a file.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where to write"},
                "content": {"type": "string", "description": "What to write"},
                "append": {"type": "boolean", "description": "Append instead"},
            },
            "required": ["path", "content"],
        },
    },
}
TOOLS = [WEATHER, WRITE]


def _call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


USER = {"role": "user", "content": "What is the weather in Paris?"}
SYSTEM = {"role": "system", "content": "You are a terse assistant."}
PARIS_CALL = _call("call00001", "get_weather", {"city": "Paris", "unit": "celsius"})
PARIS_RESULT = {"role": "tool", "tool_call_id": "call00001", "content": '{"temp": 18}'}

# name -> (messages, request fields: tools, add_generation_prompt, chat_template_kwargs)
CONVERSATIONS: dict[str, tuple[list[dict], dict]] = {
    "one_user": ([USER], {}),
    "system_first": ([SYSTEM, USER], {}),
    "multi_turn": (
        [
            SYSTEM,
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Tell me a joke."},
        ],
        {},
    ),
    "tools_offered": ([SYSTEM, USER], {"tools": TOOLS}),
    "tool_call_and_result": (
        [
            USER,
            {"role": "assistant", "content": None, "tool_calls": [PARIS_CALL]},
            PARIS_RESULT,
        ],
        {"tools": TOOLS},
    ),
    "parallel_calls_with_results": (
        [
            SYSTEM,
            {"role": "user", "content": "Weather in Paris and Tokyo, then save it."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    PARIS_CALL,
                    _call("call00002", "get_weather", {"city": "Tokyo"}),
                ],
            },
            PARIS_RESULT,
            {"role": "tool", "tool_call_id": "call00002", "content": '{"temp": 24}'},
            {"role": "assistant", "content": "Paris 18°C, Tokyo 24°C."},
            {"role": "user", "content": "Save that to notes.txt"},
        ],
        {"tools": TOOLS},
    ),
    "reasoning_in_history": (
        [
            {"role": "user", "content": "2+2?"},
            {
                "role": "assistant",
                "reasoning_content": "Two plus two is four.",
                "content": "4",
            },
            {"role": "user", "content": "And 3+3?"},
        ],
        {},
    ),
    "reasoning_then_call": (
        [
            USER,
            {
                "role": "assistant",
                "content": None,
                "reasoning": "I should look it up.",
                "tool_calls": [PARIS_CALL],
            },
            PARIS_RESULT,
        ],
        {"tools": TOOLS},
    ),
    "content_parts": (
        [
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "First line."},
                    {"type": "text", "text": "Second line."},
                ],
            },
        ],
        {},
    ),
    "non_ascii": (
        [
            {"role": "user", "content": "Grüße aus Köln — 天气怎么样？ 🙂"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [_call("call00003", "write_file", {"path": "ü.txt", "content": "日本語 ✓"})],
            },
            {"role": "tool", "tool_call_id": "call00003", "name": "write_file", "content": "écrit ✓"},
        ],
        {"tools": TOOLS},
    ),
    "thinking_on": ([USER], {"chat_template_kwargs": {"enable_thinking": True, "thinking": True}}),
    "thinking_off": ([USER], {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}}),
    "ends_with_assistant": (
        [USER, {"role": "assistant", "content": "Sunny, 18°C.", "reasoning_content": "Checked."}],
        {"add_generation_prompt": False},
    ),
    "broken_alternation": (
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        {},
    ),
}

# Small templates for the environment's own features (sandbox, filters, globals).
FEATURES = {
    "tojson_options": "{{ messages[0] | tojson(indent=2, sort_keys=true) }}|"
    "{{ {'é': 1, 'a': [1, 2]} | tojson(separators=(',', ':')) }}|{{ '<&>' | tojson }}",
    "generation_block": "{% for m in messages %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}",
    "loop_controls": "{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}"
    "{{ m.role }}{% continue %}x{% endfor %}",
    "raise_exception": "{{ raise_exception('nope: ' + messages[0].role) }}",
    "sandbox_dunder": "{{ messages.__class__.__mro__ }}",
    "sandbox_mutation": "{% set xs = [] %}{{ xs.append(1) }}{{ xs }}",
    "namespace_underscore": "{% set ns = namespace(_hidden=1) %}{{ ns._hidden }}",
    "namespace_underscore_set": "{% set ns = namespace() %}{% set ns._x = 1 %}{{ ns }}",
    "dict_global": "{{ dict(a=1) | tojson }}{{ dict.fromkeys(['k'], 0) | tojson }}",
    "dict_escape": "{{ dict.__class__ }}",
    "strftime": "{{ strftime_now('%Y-%m-%d %H') }}",
    "undefined_attribute": "{{ messages[0].missing.deeper }}",
    "special_tokens": "[{{ bos_token }}][{{ eos_token }}]{{ extra_flag }}",
    "message_keys": "{% for m in messages %}{{ m | tojson }}\n{% endfor %}",
}


class _FixedNow(datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(2025, 3, 14, 15, 9, 26)


@pytest.fixture(autouse=True)
def _same_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both renderers read the clock; give them the same one."""
    monkeypatch.setattr(hf, "datetime", _FixedNow)
    monkeypatch.setattr(pg, "datetime", _FixedNow)


def _served_by_vllm(messages: list[dict], text_arguments: bool = False) -> list[dict]:
    """The messages as vLLM's chat serving hands them to transformers:
    content parts joined, null content "", arguments parsed (kept as text
    with `text_arguments`), reasoning under both of vLLM's names. Written
    out separately from parsegate's own version on purpose."""
    served = []
    for message in copy.deepcopy(messages):
        content = message.get("content")
        if content is None:
            message["content"] = ""
        elif isinstance(content, list):
            message["content"] = "\n".join(part["text"] for part in content)
        for call in message.get("tool_calls") or []:
            if not text_arguments:
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if message["role"] == "assistant" and reasoning:
            message["reasoning"] = message["reasoning_content"] = reasoning
        served.append(message)
    return served


def _transformers(source: str, bos: str | None, eos: str | None, messages: list, request: dict) -> str:
    """As `tokenizer.apply_chat_template(messages, tokenize=False, ...)`
    renders, with the arguments as text where mappings make it raise."""
    try:
        return _transformers_with(source, bos, eos, _served_by_vllm(messages), request)
    except Exception:
        if not any(message.get("tool_calls") for message in messages):
            raise
    return _transformers_with(source, bos, eos, _served_by_vllm(messages, text_arguments=True), request)


def _transformers_with(source: str, bos: str | None, eos: str | None, served: list, request: dict) -> str:
    special = {name: text for name, text in (("bos_token", bos), ("eos_token", eos)) if text}
    rendered, _ = hf.render_jinja_template(
        conversations=[hf._normalize_chat_messages(served)],
        tools=request.get("tools"),
        documents=None,
        chat_template=source,
        add_generation_prompt=request.get("add_generation_prompt", True),
        **{**special, **request.get("chat_template_kwargs", {})},
    )
    return rendered[0]


def _parsegate(template: ChatTemplate, messages: list, request: dict) -> str:
    return template.render(
        messages,
        tools=request.get("tools"),
        add_generation_prompt=request.get("add_generation_prompt", True),
        **request.get("chat_template_kwargs", {}),
    )


def _assert_same(template: ChatTemplate, source: str, messages: list, request: dict) -> None:
    before = copy.deepcopy(messages)
    try:
        expected = _transformers(source, template.bos_token, template.eos_token, messages, request)
    except Exception as error:  # any failure of the oracle counts as "raises"
        with pytest.raises(ChatTemplateError):
            _parsegate(template, messages, request)
        assert messages == before, f"transformers raised {type(error).__name__}: {error}"
        return
    assert _parsegate(template, messages, request) == expected
    assert messages == before, "the caller's messages were changed"


@functools.cache
def _fixture(name: str) -> ChatTemplate:
    """A fixture compiled once for the whole run, as the gateway compiles
    each model's template once."""
    bos, eos = MODELS[name]
    return load_chat_template(FIXTURES / name, bos_token=bos, eos_token=eos)


@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
@pytest.mark.parametrize("fixture", sorted(MODELS))
def test_real_templates_render_as_transformers(fixture: str, conversation: str) -> None:
    template = _fixture(fixture)
    messages, request = CONVERSATIONS[conversation]
    _assert_same(template, template.source, messages, request)


@pytest.mark.parametrize("conversation", ["one_user", "reasoning_then_call", "content_parts"])
@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_environment_features_as_transformers(feature: str, conversation: str) -> None:
    source = FEATURES[feature]
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>", where=feature)
    messages, request = CONVERSATIONS[conversation]
    request = {**request, "chat_template_kwargs": {"extra_flag": "on"}}
    _assert_same(template, source, messages, request)


def test_every_fixture_is_exercised() -> None:
    on_disk = {path.name for path in FIXTURES.glob("*.jinja")}
    assert on_disk == set(MODELS)


# --- message normalisation -------------------------------------------------


def test_messages_become_what_templates_read() -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "user", "content": "hi", "name": None},
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "reasoning_content": "think",
            "tool_calls": [
                _call("c1", "f", {"x": 1}),
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{oops"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": [{"type": "text", "text": "1"}]},
        {"role": "assistant", "content": "done", "tool_calls": []},
    ]
    before = copy.deepcopy(messages)
    assert template_messages(messages) == [
        {"role": "system", "content": "a\nb"},
        {"role": "user", "content": "hi"},
        {
            "thinking": "think",
            "role": "assistant",
            "content": "",
            "reasoning_content": "think",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": {}}},
            ],
            "reasoning": "think",
        },
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "1"},
        {"role": "assistant", "content": "done"},
    ]
    assert messages == before


def test_reasoning_under_vllms_name_reaches_every_name() -> None:
    (message,) = template_messages([{"role": "assistant", "content": "x", "reasoning": "r"}])
    assert message["reasoning"] == message["reasoning_content"] == message["thinking"] == "r"


# --- helpers for the gateway -------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "kwargs", "opens"),
    [
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", {}, True),
        ("deepseek-ai-DeepSeek-V3.1.jinja", {"thinking": True}, True),
        ("deepseek-ai-DeepSeek-V3.1.jinja", {"thinking": False}, False),
        ("Qwen-Qwen3-0.6B.jinja", {}, False),
        ("Qwen-Qwen3-0.6B.jinja", {"enable_thinking": False}, False),
        ("openai-gpt-oss-120b.jinja", {}, False),
        ("meta-llama-Llama-3.2-3B-Instruct.jinja", {}, False),
    ],
)
def test_prompt_opens_reasoning(fixture: str, kwargs: dict, opens: bool) -> None:
    prompt = _fixture(fixture).render([USER], **kwargs)
    assert prompt_opens_reasoning(prompt) is opens


def test_prompt_opens_reasoning_with_given_markers() -> None:
    assert prompt_opens_reasoning("<|im_start|>assistant\n<think>\n")
    assert prompt_opens_reasoning("…<|start|>assistant<|channel|>analysis<|message|>")
    assert not prompt_opens_reasoning("<think>\n\n</think>\n\n")
    assert prompt_opens_reasoning("x[THINK]", ["[THINK]"])


@pytest.mark.parametrize(
    ("fixture", "stops"),
    [
        ("Qwen-Qwen3-0.6B.jinja", ["<|im_end|>"]),
        ("meta-llama-Llama-3.3-70B-Instruct.jinja", ["<|eot_id|>", "<|eom_id|>"]),
        ("meta-llama-Llama-3.2-3B-Instruct.jinja", ["<|eot_id|>"]),
        ("openai-gpt-oss-120b.jinja", ["<|return|>", "<|call|>"]),
        ("google-gemma-2-2b-it.jinja", ["<eos>", "<end_of_turn>"]),
        ("mistralai-Mistral-Nemo-Instruct-2407.jinja", ["</s>"]),
        ("zai-org-GLM-4.6.jinja", ["<|endoftext|>", "<|user|>", "<|observation|>"]),
        ("CohereForAI-c4ai-command-r-plus-tool_use.jinja", ["<|END_OF_TURN_TOKEN|>"]),
        ("deepseek-ai-DeepSeek-V3.1.jinja", ["<｜end▁of▁sentence｜>"]),
        ("google-gemma-4-31B-it.jinja", ["<turn|>", "<|tool_response>"]),
    ],
)
def test_stop_texts(fixture: str, stops: list[str]) -> None:
    assert _fixture(fixture).stop_texts() == stops


def test_strip_bos() -> None:
    template = _fixture("meta-llama-Llama-3.2-3B-Instruct.jinja")
    prompt = template.render([USER])
    assert prompt.startswith("<|begin_of_text|><|start_header_id|>")
    assert template.strip_bos(prompt) == prompt[len("<|begin_of_text|>") :]
    qwen = _fixture("Qwen-Qwen3-0.6B.jinja")
    assert qwen.strip_bos("<|im_start|>user") == "<|im_start|>user"


def test_render_errors_are_one_line_and_name_the_template() -> None:
    template = _fixture("google-gemma-2-2b-it.jinja")
    with pytest.raises(ChatTemplateError) as caught:
        template.render([SYSTEM, USER])
    assert str(caught.value) == f"{FIXTURES / 'google-gemma-2-2b-it.jinja'}: System role not supported"


def test_raise_exception_is_a_template_error_carrying_the_message() -> None:
    template = ChatTemplate("{{ raise_exception('bad turn') }}", where="t")
    with pytest.raises(ChatTemplateError) as caught:
        template.render([USER])
    assert isinstance(caught.value.__cause__, pg.TemplateRaised)
    assert caught.value.__cause__.message == "bad turn"


def test_no_tools_is_none_to_the_template() -> None:
    template = ChatTemplate("{{ tools is none }}")
    assert template.render([USER], tools=[]) == "True"
    assert template.render([USER]) == "True"


def test_the_arguments_form_that_rendered_is_tried_first() -> None:
    """Arguments are mappings until a render fails with them and succeeds
    with the request's text; from then on the text goes first."""
    source = (
        "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.arguments is string }}"
        "{% if m.content == 'concat' %}{{ '|' + c.function.arguments }}{% endif %}{% endfor %}{% endfor %}"
    )
    template = ChatTemplate(source)

    def history(content: str) -> list[dict]:
        return [USER, {"role": "assistant", "content": content, "tool_calls": [PARIS_CALL]}]

    assert template.render(history("")) == "False"
    assert template.render(history("concat")) == "True|" + PARIS_CALL["function"]["arguments"]
    assert template.render(history("")) == "True"
