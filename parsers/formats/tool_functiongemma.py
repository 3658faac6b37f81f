"""Google FunctionGemma tool calls (docs/peer-formats.md `functiongemma`):
Gemma 4's `call:NAME{…}` notation, with `<escape>` around strings and its
own markers, one block per call::

    <start_function_call>call:get_weather{city:<escape>Paris<escape>,days:2}<end_function_call>
    <start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call><start_function_call>call:search{query:<escape>x<escape>}<end_function_call>

Strings are between `<escape>` tokens, other values bare (numbers,
`true`/`false`), objects and arrays nest, as FunctionGemma's chat template
writes them and llama.cpp's FunctionGemma format reads them
(Google's FunctionGemma formatting guide, https://ai.google.dev/gemma/docs/functiongemma;
vLLM's `functiongemma` parser, vllm/tool_parsers/functiongemma_tool_parser.py,
reads `<escape>` strings only). Models: google/functiongemma-270m-it.
"""

from functools import partial

from parsers.formats.table import register
from parsers.grammars.gemma4_call import Gemma4Call, Gemma4Delimiters, render_gemma4
from parsers.stages.tool_calls import ToolFormat

START, END, ESCAPE = "<start_function_call>", "<end_function_call>", "<escape>"

register(
    ToolFormat(
        name="functiongemma",
        models="Google FunctionGemma",
        call_start=START,
        call_end=END,
        body=partial(Gemma4Call, delimiters=Gemma4Delimiters(ESCAPE, END)),
        call_template=START + "call:{name}{arguments}" + END,
        render_arguments=partial(render_gemma4, quote=ESCAPE),
        dropped_markers=(END,),
        end_of_turn=("<end_of_turn>", "<start_function_response>"),
        needs_special_tokens=True,
    )
)
