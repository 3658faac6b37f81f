"""Mistral's `[TOOL_CALLS]` (docs/parsers.md): a JSON array of call objects,
or, with newer tokenizers, compact calls. `[TOOL_CALLS]` is a control token.

    [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "x"}}]
    [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]search[ARGS]{"query": "x"}
    [TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}
    [TOOL_CALLS]get_weather{"city": "Paris"}

The last is a compact call whose `[ARGS]` control token was not written
out (vLLM reads it too): the name runs up to the `{` of the arguments.

Call ids are 9 ASCII letters and digits, as vLLM's `MistralToolCall` makes
them: mistral-common and the Mistral chat templates refuse any other id
when the conversation comes back ("Tool call IDs should be alphanumeric
strings with length 9!").
"""

from functools import partial

from parsers.formats.table import register
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.named_call import ByFirstChar, NamedJsonCall
from parsers.stages.tool_calls import ToolFormat

register(
    ToolFormat(
        name="mistral",
        models="Mistral 7B v0.3, Mixtral, Mistral Small / Medium / Large, Magistral, Devstral",
        call_start="[TOOL_CALLS]",
        call_end="",
        body=partial(
            ByFirstChar,
            json_body=JsonCalls,
            named_body=partial(
                NamedJsonCall,
                args_start="[ARGS]",
                bare_object_args=True,
                name_pattern=r"\s*(?P<name>[^\s\[\]]+)\s*(?:\[CALL_ID\]\s*[^\s\[]*\s*)?",
            ),
        ),
        call_template='[TOOL_CALLS][{"name": "{name}", "arguments": {arguments}}]',
        end_of_turn=("</s>",),
        needs_special_tokens=True,
        call_id_template="{random:9}",
    )
)
