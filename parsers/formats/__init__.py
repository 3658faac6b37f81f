"""The built-in formats. Importing this package registers them all."""

from parsers.formats import reasoning_think, tool_json, tool_mistral, tool_named  # noqa: F401
