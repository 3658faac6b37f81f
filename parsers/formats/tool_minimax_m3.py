"""MiniMax M3 tool calls (docs/parsers.md `minimax-m3`): every tag carries
the namespace token `]<]minimax[>[`; parameters are tags named after them,
nested for objects, `<item>` for array elements, typed by the tool's
schema. The grammar is `parsers.grammars.minimax_m3_call`. M3 calls the tools its
template declares even in a request without tools, so such a request is
parsed too (`parses_without_tools`).

Two calls: two `<invoke>` in the block::

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="get_weather">
    ]<]minimax[>[<city>Paris]<]minimax[>[</city>
    ]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>
"""

from parsers.formats.table import register
from parsers.grammars.minimax_m3_call import NAMESPACE, MinimaxM3Calls
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

register(
    ToolFormat(
        name="minimax-m3",
        models="MiniMax M3",
        call_start=NAMESPACE,
        call_end="",
        body=MinimaxM3Calls,
        call_template=(
            f'{NAMESPACE}<tool_call>\n{NAMESPACE}<invoke name="{{name}}">\n{{arguments}}{NAMESPACE}</invoke>\n{NAMESPACE}</tool_call>'
        ),
        render_arguments=ParameterTags(f"{NAMESPACE}<{{key}}>{{value}}{NAMESPACE}</{{key}}>\n"),
        parses_without_tools=True,
    )
)
