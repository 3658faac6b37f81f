"""Cohere Command A / Command 4 (docs/parsers.md `cohere_command4`).

The template opens `<|START_THINKING|>`, so the output starts inside the
reasoning; then either an answer or a block of calls, a JSON array::

    Need the weather.<|END_THINKING|><|START_TEXT|>It is sunny.<|END_TEXT|>
    Need the weather.<|END_THINKING|><|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
    ]<|END_ACTION|>

`<|START_TEXT|>` and `<|END_TEXT|>` (Command 3's `<|START_RESPONSE|>`
and `<|END_RESPONSE|>`) are removed from the content; text
after `<|END_THINKING|>` outside them is content too. With reasoning off
the template closes the reasoning itself and the output starts at
`<|START_TEXT|>` or `<|START_ACTION|>`, which end reasoning when
`<|END_THINKING|>` is missing: so every turn starts in reasoning. `tool_call_id` is ignored (ids are the gateway's); `name` and
`arguments` are read as well. All markers are special tokens.
"""

from functools import partial

from parsers.formats.table import register
from parsers.grammars.json_call import JsonCalls
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

NAME = "cohere_command4"
MODELS = "Cohere Command A Reasoning / Command 4"
START_ACTION = "<|START_ACTION|>"
END_OF_TURN = ("<|END_OF_TURN_TOKEN|>",)
# Command A (Command 3) templates wrap the answer in these instead.
COMMAND3_ANSWER = ("<|START_RESPONSE|>", "<|END_RESPONSE|>")

register(
    ReasoningFormat(
        name=NAME,
        models=MODELS,
        start="<|START_THINKING|>",
        end="<|END_THINKING|>",
        tool_start=START_ACTION,
        answer_markers=("<|START_TEXT|>", "<|END_TEXT|>", *COMMAND3_ANSWER),
        always_thinking=True,
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
    )
)
register(
    ToolFormat(
        name=NAME,
        models=MODELS,
        call_start=START_ACTION,
        call_end="<|END_ACTION|>",
        body=partial(JsonCalls, name_keys=("tool_name", "name"), args_keys=("parameters", "arguments")),
        call_template=START_ACTION
        + '[\n    {"tool_call_id": "0", "tool_name": "{name}", "parameters": {arguments}}\n]<|END_ACTION|>',
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
    )
)
