"""The built-in formats. Importing this package registers them all."""

from parsers.formats import (  # noqa: F401
    harmony,
    reasoning_minimax_m3,
    reasoning_think,
    tool_dots,
    tool_dsml,
    tool_gcml,
    tool_gemma4,
    tool_json,
    tool_minimax_m3,
    tool_mistral,
    tool_named,
    tool_pythonic,
    tool_steptml,
    tool_tags,
)
