"""Tool-call formats that only vLLM parses, whose calls are not JSON
objects: OLMo 3's Python calls and Seed-OSS's parameter tags.

AllenAI OLMo 3 (`olmo3`): Python calls, one per line, in a block; values
may also be written true/false/null::

    <function_calls>get_weather(city="Paris")</function_calls>
    <function_calls>
    get_weather(city="Paris", days=2)
    search(query="x", exact=true)
    </function_calls>

ByteDance Seed-OSS (`seed_oss`): Qwen3-Coder's tags in a `<seed:tool_call>`
block, values typed by the tool's schema (two calls: two blocks)::

    <seed:tool_call>
    <function=get_weather>
    <parameter=city>Paris</parameter>
    </function>
    </seed:tool_call>
"""

from dataclasses import replace
from functools import partial

from parsers.core.py_literal import JSON_CONSTANTS
from parsers.formats.table import register
from parsers.formats.tool_tags import QWEN3_CODER, QWEN3_CODER_SYNTAX
from parsers.grammars.pythonic import PythonicCalls, render_kwargs
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

register(
    ToolFormat(
        name="olmo3",
        models="AllenAI OLMo 3 Instruct / Think",
        call_start="<function_calls>",
        call_end="</function_calls>",
        body=partial(PythonicCalls, constants=JSON_CONSTANTS, bracketless=True, stop="</function_calls>"),
        call_template="<function_calls>{name}({arguments})</function_calls>",
        render_arguments=render_kwargs,
        dropped_markers=("</function_calls>",),
    )
)

SEED_OSS_SYNTAX = replace(
    QWEN3_CODER_SYNTAX,
    call_closes=("</function>", "</seed:tool_call>"),
    closes_after_value=("</function>", "</seed:tool_call>"),
    # Seed-OSS's template writes `<parameter=K>` + the value + `</parameter>`, flush, so a
    # value's last newline is its own (llama.cpp tests/test-chat.cpp, ByteDance-Seed-OSS "tool
    # call with inside quotes"); a value padded with a newline on each side loses both
    # (llama.cpp tests/chat-parsers/test-seed-oss.cpp).
    trim="paired_newline",
)
register(
    replace(
        QWEN3_CODER,
        name="seed_oss",
        models="ByteDance Seed-OSS-36B",
        call_start="<seed:tool_call>",
        call_end="</seed:tool_call>",
        body=partial(TagCall, syntax=SEED_OSS_SYNTAX),
        call_template="<seed:tool_call>\n<function={name}>\n{arguments}</function>\n</seed:tool_call>",
        render_arguments=ParameterTags("<parameter={key}>{value}</parameter>\n"),
        end_of_turn=("<seed:eos>",),
        # Call syntax the model writes while thinking is no call, also with no reasoning
        # parser to take the block (vLLM tests/tool_parsers/test_seed_oss_tool_parser.py).
        passthrough_blocks=(("<seed:think>", "</seed:think>"),),
    )
)
