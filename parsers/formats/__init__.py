"""The built-in formats. Importing this package registers them all."""

from parsers.formats import (  # noqa: F401
    apertus,
    beam,
    cohere,
    harmony,
    inkling,
    k2_horizon,
    kimi_k3,
    muse,
    reasoning_hunyuan,
    reasoning_think,
    tool_arg_key,
    tool_dsml,
    tool_gemma4,
    tool_hunyuan,
    tool_json,
    tool_mistral,
    tool_named,
    tool_pythonic,
    tool_steptml,
    tool_tags,
)
