"""What one request may cost the gateway (docs/configuration.md#request-bounds):
settable under `server:` for every model, and on a model entry for that
model alone (`with_server_bounds` fills what an entry leaves unset).

The defaults are far from any real agent conversation, and far below what
stalls the gateway:

- `max_input_items` 20,000 messages / input items: a long coding-agent
  session holds a few thousand (a tool step is 2-3 items), and 20,000
  items of 50 tokens each fill a 1M-token context. Anthropic's own
  Messages API stops at 100,000 messages. Checking 20,000 messages takes
  pydantic about 40 ms, which it spends holding the interpreter.
- `max_prompt_chars` 8 Mi characters: text runs at 3-4 characters a token
  (1-2 for CJK), so a prompt this long exceeds a 1M-token context; a
  backend would refuse it anyway, after reading it.
- `render_timeout` 10 s: rendering 20,000 messages with a real template
  (Qwen3's) takes well under a second.
- `render_workers` 2 renders of a model at once; more wait their turn.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

MAX_INPUT_ITEMS = 20_000
MAX_PROMPT_CHARS = 8 << 20
RENDER_TIMEOUT = 10.0
RENDER_WORKERS = 2


class RequestBounds(BaseModel):
    """The bounds, as keys of `server:` and of a model entry."""

    max_input_items: int = Field(default=MAX_INPUT_ITEMS, ge=1)  # messages / input items a request may hold
    max_prompt_chars: int = Field(default=MAX_PROMPT_CHARS, ge=1)  # template mode: the rendered prompt's length
    render_timeout: float = Field(default=RENDER_TIMEOUT, gt=0)  # template mode: seconds to render a prompt
    render_workers: int = Field(default=RENDER_WORKERS, ge=1)  # template mode: renders of a model at once


BOUND_KEYS = tuple(RequestBounds.model_fields)


def with_server_bounds(model: RequestBounds, server: RequestBounds) -> dict[str, object]:
    """The bounds a model entry does not set itself, as `server` sets them."""
    return {key: getattr(server, key) for key in BOUND_KEYS if key not in model.model_fields_set}
