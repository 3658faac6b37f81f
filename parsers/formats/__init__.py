"""The built-in formats, as data. Importing this package registers them all
in `TOOL_FORMATS` and `REASONING_FORMATS`, by parser name, then the peers'
names for them (`peer_names`)."""

from parsers.formats import (  # noqa: F401
    apertus,
    beam,
    cohere,
    harmony,
    inkling,
    k2_horizon,
    kimi_k3,
    llama_cpp,
    muse,
    reasoning_hunyuan,
    reasoning_minimax_m3,
    reasoning_think,
    solar_open2,
    tool_arg_key,
    tool_dots,
    tool_dsml,
    tool_functiongemma,
    tool_gcml,
    tool_gemma4,
    tool_hunyuan,
    tool_json,
    tool_minicpm,
    tool_minimax_m3,
    tool_mistral,
    tool_named,
    tool_plamo3,
    tool_pythonic,
    tool_spark25,
    tool_steptml,
    tool_tags,
    vllm_json,
    vllm_reasoning,
    vllm_tags,
)
from parsers.formats.peer_names import register_peer_names
from parsers.formats.table import REASONING_FORMATS, TOOL_FORMATS

register_peer_names()

__all__ = ["REASONING_FORMATS", "TOOL_FORMATS"]
