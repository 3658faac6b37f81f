"""Chat formats that llama.cpp parses and SGLang does not, under
llama.cpp's format names in snake_case (`COMMON_CHAT_FORMAT_COMMAND_R7B`
is `command_r7b`). `seed_oss` is in `vllm_tags`, `muse_glimmer` is a name
of `muse`.

ServiceNow Apriel 1.5 (`apriel`): `<thinking>` reasoning when the model
writes it (the template does not open it), a JSON array::

    <thinking>Need the weather.</thinking><tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>
    Checking.<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>

Cohere Command R7B (`command_r7b`): Command A's blocks; the answer is in
`<|START_RESPONSE|>` … `<|END_RESPONSE|>`, which are removed::

    <|START_THINKING|>Need it.<|END_THINKING|><|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
    ]<|END_ACTION|>

Cohere Command R+ (`command_r_plus`), as its tool-use template asks::

    Action: ```json
    [
        {"tool_name": "get_weather", "parameters": {"city": "Paris"}}
    ]```

Fireworks FireFunction v2 (`firefunction_v2`)::

    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "x"}}]

Functionary v3.1 on Llama 3.1 (`functionary_v3_1`), and Llama 3.1's
`<|python_tag|>` for its code tool, the rest of the output being the code
(`python {"code": "print(1)"}`)::

    <function=get_weather>{"city": "Paris"}</function><function=search>{"query": "x"}</function>
    <|python_tag|>print(1)

Functionary v3.2 (`functionary_v3_2`): messages `RECIPIENT\\n…`, the
first one without `>>>` (the template wrote it); `all` is text, `python`
takes raw code::

    all\nChecking.>>>get_weather\n{"city": "Paris"}>>>python\nprint(1)

llama.cpp's generic JSON reply (`generic`), for templates with no format
of their own: a call object, a list of them, or a `response` (content)::

    {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    {"response": "Hello!"}

IBM Granite 4.0 (`granite4`), Hermes-style::

    <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>

NVIDIA Nemotron Nano v2 (`nemotron_nano_v2`): `<think>` reasoning, then::

    <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "x"}}]</TOOLCALL>

MiniCPM 5 (`minicpm5` reasoning): `<think>…</think>` before its
`<function name=…>` calls.
"""

from dataclasses import replace
from functools import partial

from parsers.formats.reasoning_think import QWEN3
from parsers.formats.table import register
from parsers.grammars.code_tag import code_tag_or
from parsers.grammars.fenced_json import FencedJson
from parsers.grammars.generic_reply import GenericReply
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.named_call import NamedJsonCall
from parsers.grammars.recipient_call import WORD_CHARS, RecipientCall
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

_ARRAY = '[{"name": "{name}", "arguments": {arguments}}]'

register(
    ReasoningFormat(
        name="apriel",
        models="ServiceNow Apriel 1.5 / 1.6 Thinker",
        start="<thinking>",
        end="</thinking>",
        tool_start="<tool_calls>",
        # Apriel 1.5's template ends at `<|assistant|>\n`: the model opens
        # reasoning itself, and a reply without `<thinking>` is content
        # (llama.cpp forces it open only for a prompt ending in <thinking>:
        # common/chat-parsers/apriel-1-5.cpp; models/templates/unsloth-Apriel-1.5.jinja).
        thinking_switches=(),
        thinking_by_default=False,
    )
)
register(
    ToolFormat(
        name="apriel",
        models="ServiceNow Apriel 1.5 / 1.6 Thinker",
        call_start="<tool_calls>",
        call_end="</tool_calls>",
        body=JsonCalls,
        call_template="<tool_calls>" + _ARRAY + "</tool_calls>",
        dropped_markers=("</tool_calls>",),
    )
)

_COMMAND_R7B_ANSWER = ("<|START_RESPONSE|>", "<|END_RESPONSE|>")
register(
    ReasoningFormat(
        name="command_r7b",
        models="Cohere Command R7B (c4ai-command-r7b-12-2024)",
        start="<|START_THINKING|>",
        end="<|END_THINKING|>",
        tool_start="<|START_ACTION|>",
        # The template ends at <|CHATBOT_TOKEN|>: the model opens reasoning itself
        # (llama.cpp forces it open only for a prompt ending in <|START_THINKING|>).
        thinking_switches=(),
        thinking_by_default=False,
        answer_markers=_COMMAND_R7B_ANSWER,
        end_of_turn=("<|END_OF_TURN_TOKEN|>",),
        needs_special_tokens=True,
    )
)
register(
    ToolFormat(
        name="command_r7b",
        models="Cohere Command R7B (c4ai-command-r7b-12-2024)",
        call_start="<|START_ACTION|>",
        call_end="<|END_ACTION|>",
        body=partial(JsonCalls, name_keys=("tool_name", "name"), args_keys=("parameters", "arguments")),
        call_template='<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "{name}", "parameters": {arguments}}\n]<|END_ACTION|>',
        dropped_markers=_COMMAND_R7B_ANSWER,
        end_of_turn=("<|END_OF_TURN_TOKEN|>",),
        needs_special_tokens=True,
    )
)
_COHERE_CALLS = partial(JsonCalls, name_keys=("tool_name", "name"), args_keys=("parameters", "arguments"))
register(
    ToolFormat(
        name="command_r_plus",
        models="Cohere Command R+ (c4ai-command-r-plus, c4ai-command-r-plus-08-2024)",
        call_start="Action:",
        call_end="```",
        body=partial(FencedJson, inner=_COHERE_CALLS),
        call_template='Action: ```json\n[\n    {\n        "tool_name": "{name}",\n        "parameters": {arguments}\n    }\n]```',
        dropped_markers=("<|CHATBOT_TOKEN|>",),
        end_of_turn=("<|END_OF_TURN_TOKEN|>",),
    )
)
register(
    ToolFormat(
        name="firefunction_v2",
        models="Fireworks FireFunction v2",
        call_start="functools",
        call_end="",
        body=JsonCalls,
        call_template=" functools" + _ARRAY,
        end_of_turn=("<|eot_id|>",),
    )
)
register(
    ToolFormat(
        name="functionary_v3_1",
        models="MeetKai Functionary v3.1 (Llama 3.1)",
        call_start="<function=",
        call_end="</function>",
        unmarked_starts=("<|python_tag|>",),
        body=code_tag_or(
            partial(NamedJsonCall, args_start=">", name_pattern=r"(?P<name>[\w.\-]+)", args_end="</function>"),
            tag="<|python_tag|>",
            tool="python",
        ),
        call_template="<function={name}>{arguments}</function>",
        end_of_turn=("<|eom_id|>", "<|eot_id|>"),
        needs_special_tokens=True,
    )
)
register(
    ToolFormat(
        name="functionary_v3_2",
        models="MeetKai Functionary v3.2 (functionary-small / medium-v3.2)",
        call_start=">>>",
        call_end="",
        bare_start=WORD_CHARS,
        body=RecipientCall,
        call_template=">>>{name}\n{arguments}",
        end_of_turn=("<|eom_id|>", "<|eot_id|>"),
    )
)
register(
    ToolFormat(
        name="generic",
        models="any model under llama.cpp's generic JSON tool-call schema",
        call_start="{",
        call_end="",
        body=GenericReply,
        call_template='{"tool_call": {"name": "{name}", "arguments": {arguments}}}',
    )
)
register(
    ToolFormat(
        name="granite4",
        models="IBM Granite 4.0",
        call_start="<tool_call>",
        call_end="</tool_call>",
        body=JsonCalls,
        call_template='<tool_call>{"name": "{name}", "arguments": {arguments}}</tool_call>',
        dropped_markers=("</tool_call>",),
        end_of_turn=("<|end_of_text|>",),
    )
)
register(
    ToolFormat(
        name="nemotron_nano_v2",
        models="NVIDIA Nemotron Nano 2 (9B / 12B v2)",
        call_start="<TOOLCALL>",
        call_end="</TOOLCALL>",
        body=JsonCalls,
        call_template="<TOOLCALL>" + _ARRAY + "</TOOLCALL>",
        dropped_markers=("</TOOLCALL>",),
    )
)
register(
    replace(QWEN3, name="nemotron_nano_v2", models="NVIDIA Nemotron Nano 2", tool_start="<TOOLCALL>", end_of_turn=())
)
# MiniCPM 5's template opens `<think>` only with `enable_thinking: true` (and
# closes an empty one with `false`); left unset it opens nothing, so a reply
# is reasoning only from a `<think>` the model writes (openbmb/MiniCPM5-1B's
# chat template, tests/fixtures/chat_templates/openbmb-MiniCPM5-1B.jinja).
register(
    replace(
        QWEN3,
        name="minicpm5",
        models="OpenBMB MiniCPM 4 / 5",
        tool_start=None,
        end_of_turn=("<|im_end|>",),
        thinking_by_default=False,
    )
)
