"""gpt-oss (Harmony): reasoning in the `analysis` channel, tool calls as
messages with a recipient (docs/parsers.md `gpt-oss`).

One call; two calls are two such messages::

    <|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>

The recipient may also sit in the role header
(`<|start|>assistant to=functions.get_weather<|channel|>commentary …`). The
function name is the recipient less its `functions.` namespace
(`to=functions.db.search` is `db.search`), or the last dot-segment of a
recipient in any other namespace.
"""

from functools import partial

from parsers.formats.table import register
from parsers.grammars.named_call import NamedJsonCall
from parsers.stages.harmony import HarmonyReasoningParser
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

register(
    ReasoningFormat(
        name="gpt-oss",
        models="OpenAI gpt-oss-20b / 120b (Harmony)",
        start="<|channel|>analysis<|message|>",
        end="<|end|>",
        always_thinking=True,
        needs_special_tokens=True,
        stage=HarmonyReasoningParser,
    )
)
register(
    ToolFormat(
        name="gpt-oss",
        models="OpenAI gpt-oss-20b / 120b (Harmony)",
        call_start="<|start|>",
        other_call_starts=("<|channel|>",),
        call_end="<|call|>",
        body=partial(
            NamedJsonCall,
            args_start="<|message|>",
            # `functions.NAME` is NAME whole, dots included, as vLLM's gpt-oss parser reads it;
            # another namespace's recipient is named by its last dot-segment, as SGLang's.
            name_pattern=r".*?\bto=(?:functions\.(?=[^\s<])|(?:[^\s<]*\.)?(?=[^\s.<]+(?:[\s<]|$)))(?P<name>[^\s<]+)"
            r"(?:\s.*|<.*)?",
            args_end="<|call|>",
        ),
        call_template="<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>",
        dropped_markers=("<|end|>", "<|return|>", "<|call|>"),
        needs_special_tokens=True,
        framing="gpt-oss",
    )
)
