"""Tool-use ids on the Anthropic Messages surface.

Anthropic's API takes a `tool_use` block's `id` and a `tool_result`
block's `tool_use_id` only if they match `^[a-zA-Z0-9_-]+$`
(https://docs.anthropic.com/en/api/messages). A model family that numbers
its calls itself may make ids outside that pattern (`ParsePlan.call_id`:
Kimi K2's `functions.NAME:N`, Kimi K3's `NAME:N`), and its chat template
renders them back in the next turn. So ids go out encoded and come back
decoded (docs/api.md#call-ids):

- an id that matches the pattern and does not start with `toolu_enc_`
  goes out as it is;
- any other id goes out as `toolu_enc_` and the id, each UTF-8 byte that
  is not an ASCII letter, digit or `_` written as `-` and two uppercase
  hex digits: `functions.get_weather:0` is
  `toolu_enc_functions-2Eget_weather-3A0`;
- an id the client sends is decoded if it is exactly such an encoding, and
  kept as sent otherwise (an id the client chose itself).
"""

from __future__ import annotations

import re

ENCODED_PREFIX = "toolu_enc_"
_ALLOWED = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPED_BYTE = re.compile(rb"[^A-Za-z0-9_]")
_ESCAPE = re.compile(rb"-([0-9A-F]{2})")


def encode_call_id(call_id: str) -> str:
    """The Messages id for the turn's call id `call_id`."""
    if _ALLOWED.fullmatch(call_id) and not call_id.startswith(ENCODED_PREFIX):
        return call_id
    escaped = _ESCAPED_BYTE.sub(lambda byte: b"-%02X" % byte[0][0], call_id.encode())
    return ENCODED_PREFIX + escaped.decode("ascii")


def decode_tool_use_id(tool_use_id: str) -> str:
    """The call id behind a Messages id the client sent: the model's own
    for an id `encode_call_id` made, else the id as sent."""
    if not tool_use_id.startswith(ENCODED_PREFIX):
        return tool_use_id
    try:
        body = tool_use_id[len(ENCODED_PREFIX) :].encode()
        decoded = _ESCAPE.sub(lambda escape: bytes.fromhex(escape[1].decode()), body).decode()
    except UnicodeError:  # a lone surrogate sent, or escapes that are not UTF-8
        return tool_use_id
    return decoded if encode_call_id(decoded) == tool_use_id else tool_use_id
