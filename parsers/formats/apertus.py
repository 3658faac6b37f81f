"""Swiss AI Apertus 2509 (docs/parsers.md `apertus2509`).

Reasoning blocks, several per turn, and tool calls as a JSON array of
objects keyed by the function name::

    <|inner_prefix|>Need the weather.<|inner_suffix|>Checking.<|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"search": {"query": "x"}}]<|tools_suffix|>

Reasoning starts only at `<|inner_prefix|>`. A tools block written inside
reasoning is content (for the tool-call stage) and the reasoning around it
is joined: `<|inner_prefix|>Hmm.<|tools_prefix|>[…]<|tools_suffix|>more<|inner_suffix|>`
gives reasoning `Hmm.more`. All markers are special tokens.
"""

from functools import partial

from parsers.formats.table import register
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.keyed_call import KeyedCallObject
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

MODELS = "Swiss AI Apertus 8B / 70B Instruct 2509"
TOOLS_PREFIX, TOOLS_SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
END_OF_TURN = ("<|assistant_end|>",)

register(
    ReasoningFormat(
        name="apertus2509",
        models=MODELS,
        start="<|inner_prefix|>",
        end="<|inner_suffix|>",
        start_required=True,
        reenters=True,
        passthrough=(TOOLS_PREFIX, TOOLS_SUFFIX),
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
    )
)
register(
    ToolFormat(
        name="apertus2509",
        models=MODELS,
        call_start=TOOLS_PREFIX,
        call_end=TOOLS_SUFFIX,
        body=partial(JsonCalls, item=KeyedCallObject),
        call_template=TOOLS_PREFIX + '[{"{name}": {arguments}}]' + TOOLS_SUFFIX,
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
    )
)
