"""Kimi K3 ("XTML"): reasoning, reply and tool calls as channels of special
tokens (docs/parsers.md `kimi_k3`).

One call, after the reply (more calls: more `<|open|>call …<|close|>call<|sep|>`
in the tools channel)::

    <|open|>think<|sep|>Need weather.<|close|>think<|sep|>
    <|open|>response<|sep|>Checking.<|close|>response<|sep|>
    <|open|>tools<|sep|>
    <|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
    <|open|>argument key="days" type="integer"<|sep|>2<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|>

The reasoning stage (`parsers.stages.xtml`) splits the channels. In the tools
channel an argument's `type="string"` keeps its text exactly (no entity
decoding, no trimming); any other type is JSON, or the text when it is not;
an argument without a type is typed by the tool schema. Attribute values
(`tool`, `key`) decode `&quot;` and `&amp;`; the model's `index` is ignored
and call ids are `NAME:N`, N counting the conversation's earlier calls.
"""

from functools import partial

import orjson

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.tag_call import TagCall
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.xtml import WRAPPERS, XtmlReasoningParser

TOOLS_OPEN = "<|open|>tools<|sep|>"
TOOLS_CLOSE = "<|close|>tools<|sep|>"
CALL_CLOSE = "<|close|>call<|sep|>"
_OTHER_ATTRIBUTES = r'(?:\s+\w+="[^"]*")*\s*'
_JSON_TYPE_NAMES = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
    list: "array",
    dict: "object",
}

register(
    ReasoningFormat(
        name="kimi_k3",
        models="Kimi K3 (XTML); off with `thinking: false`",
        start="<|open|>think<|sep|>",
        end="<|close|>think<|sep|>",
        tool_start=TOOLS_OPEN,
        thinking_switches=("thinking",),
        needs_special_tokens=True,
        stage=XtmlReasoningParser,
    )
)


def _attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _xtml_arguments(arguments: str) -> str:
    """Argument tags for a JSON arguments object, each typed by its value."""
    return "".join(
        f'<|open|>argument key="{_attribute(key)}" type="{_JSON_TYPE_NAMES[type(value)]}"<|sep|>'
        f"{value if isinstance(value, str) else orjson.dumps(value).decode()}<|close|>argument<|sep|>"
        for key, value in orjson.loads(arguments).items()
    )


register(
    ToolFormat(
        name="kimi_k3",
        models="Kimi K3 (XTML)",
        section_start=TOOLS_OPEN,
        section_end=TOOLS_CLOSE,
        call_start="<|open|>call",
        call_end="",
        body=partial(
            TagCall,
            syntax=TagSyntax(
                name_ends=("<|sep|>",),
                name_pattern=r'\s+(?:\w+="[^"]*"\s+)*?tool="(?P<name>[^"]+)"' + _OTHER_ATTRIBUTES,
                key_open="<|open|>argument",
                key_close="<|sep|>",
                key_pattern=r'\s+key="(?P<key>[^"]*)"(?:\s+type="(?P<type>[^"]*)")?' + _OTHER_ATTRIBUTES,
                value_close="<|close|>argument<|sep|>",
                call_closes=(CALL_CLOSE,),
                closes_after_value=(CALL_CLOSE, TOOLS_CLOSE),  # text inside a value
                trim="none",
                attribute_entities=True,
            ),
        ),
        call_template=f'{TOOLS_OPEN}<|open|>call tool="{{name}}" index="1"<|sep|>{{arguments}}{CALL_CLOSE}{TOOLS_CLOSE}',
        render_arguments=_xtml_arguments,
        dropped_markers=(TOOLS_CLOSE, CALL_CLOSE, *WRAPPERS),
        needs_special_tokens=True,
        call_id_template="{name}:{n}",
    )
)
