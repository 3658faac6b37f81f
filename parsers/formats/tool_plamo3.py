"""Preferred Networks PLaMo 3 tool calls (docs/peer-formats.md `plamo3`),
as vLLM's `plamo3` parser reads them
(vllm/tool_parsers/plamo3_tool_parser.py, https://github.com/vllm-project/vllm):
a block of requests, each a name tag then a JSON arguments tag whose
opening is followed by the constraint tokens `<|plamo:constrain|>json<|plamo:msg|>`
(vLLM's `BEGIN_TOOL_ARGS_TAG` in vllm/reasoning/plamo3_reasoning_parser.py),
the tags adjacent::

    <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Paris"}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>

Two calls are two requests in the block. The tags are plain text, not
special tokens; `<|plamo:tag|>` ends the turn. The reasoning format is
`plamo3` in `vllm_reasoning`.
"""

from functools import partial

from parsers.formats.table import register
from parsers.grammars.named_call import NamedJsonCall
from parsers.stages.tool_calls import ToolFormat

REQUEST_START, REQUEST_END = "<|plamo:begin_tool_request:plamo|>", "<|plamo:end_tool_request:plamo|>"
NAME_START, NAME_END = "<|plamo:begin_tool_name:plamo|>", "<|plamo:end_tool_name:plamo|>"
ARGUMENTS_START = "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
ARGUMENTS_END = "<|plamo:end_tool_arguments:plamo|>"
REQUESTS_START, REQUESTS_END = "<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>"

register(
    ToolFormat(
        name="plamo3",
        models="Preferred Networks PLaMo 3",
        section_start=REQUESTS_START,
        section_end=REQUESTS_END,
        call_start=REQUEST_START,
        call_end=REQUEST_END,
        body=partial(
            NamedJsonCall,
            args_start=NAME_END + ARGUMENTS_START,
            name_pattern=r"\s*" + NAME_START.replace("|", r"\|") + r"(?P<name>[^<\n]+?)\s*",
            args_end=ARGUMENTS_END,
            header_stops_at=(REQUEST_START, REQUESTS_START),
        ),
        call_template=REQUESTS_START
        + REQUEST_START
        + NAME_START
        + "{name}"
        + NAME_END
        + ARGUMENTS_START
        + "{arguments}"
        + ARGUMENTS_END
        + REQUEST_END
        + REQUESTS_END,
        dropped_markers=(ARGUMENTS_END, REQUEST_END, REQUESTS_END),
        end_of_turn=("<|plamo:tag|>",),
    )
)
