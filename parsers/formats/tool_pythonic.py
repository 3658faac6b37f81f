"""Tool calls written as Python calls (docs/parsers.md `pythonic`, `lfm2`).

Llama 4 and other pythonic templates: a list of calls anywhere in the
text, optionally between `<|python_start|>` and `<|python_end|>`::

    [get_weather(city="Paris", days=2)]
    I will call. [get_weather(city="Paris"), search(query="x", tags=["a", "b"])]

Liquid LFM2, between special tokens; JSON call objects are accepted too,
and values may be written true/false/null::

    <|tool_call_start|>[get_weather(city="Paris", days=2)]<|tool_call_end|>
    <|tool_call_start|>[get_weather(city="Paris"), search(query="x", exact=true)]<|tool_call_end|>
    <|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|tool_call_end|>
"""

from functools import partial

from parsers.core.py_literal import JSON_CONSTANTS
from parsers.formats.table import register
from parsers.grammars.pythonic import PythonicCalls, render_kwargs
from parsers.stages.tool_calls import ToolFormat

register(
    ToolFormat(
        name="pythonic",
        models="Llama 4 Scout / Maverick, Llama 3.2 pythonic templates, ToolACE",
        call_start="<|python_start|>",
        call_end="<|python_end|>",
        bare_start_anywhere="[",
        body=partial(PythonicCalls, stop="<|python_end|>"),
        call_template="[{name}({arguments})]",
        render_arguments=render_kwargs,
        dropped_markers=("<|python_end|>",),
    ),
    "llama4_pythonic",
)
register(
    ToolFormat(
        name="lfm2",
        models="Liquid LFM2 / LFM2.5",
        call_start="<|tool_call_start|>",
        call_end="<|tool_call_end|>",
        body=partial(PythonicCalls, constants=JSON_CONSTANTS, json_calls=True, stop="<|tool_call_end|>"),
        call_template="<|tool_call_start|>[{name}({arguments})]<|tool_call_end|>",
        render_arguments=render_kwargs,
        dropped_markers=("<|tool_call_end|>", "<|im_end|>"),
        needs_special_tokens=True,
    )
)
