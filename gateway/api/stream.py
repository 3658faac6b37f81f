"""Streamed chat completions: a turn's updates rendered as OpenAI
`chat.completion.chunk` events.

Per upstream chunk and choice at most one chunk goes out (plus the finish
chunk). A stream the backend cuts short still sends what the parsers held,
then ends with an OpenAI error event before `[DONE]`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from starlette.background import BackgroundTask

from gateway.api.chunks import ChoiceStream, ChunkEncoder
from gateway.api.sse import DONE, EventStream, data_event
from gateway.api.turns import Turn, TurnStream, UsageUpdate


async def _chunks(stream: TurnStream, encoder: ChunkEncoder) -> AsyncGenerator[bytes]:
    plan = stream.turn.plan
    choices: dict[int, ChoiceStream] = {}
    async with aclosing(aiter(stream)) as batches:
        async for batch in batches:
            out: list[bytes] = []  # one write per read of the backend
            for update in batch:
                if type(update) is UsageUpdate:
                    out.append(encoder.usage(update.usage))
                    continue
                index = update.choice
                choice = choices.get(index)
                if choice is None:
                    choice = choices[index] = ChoiceStream(plan.call_id, plan.reasoning_keys)
                delta = choice.delta(update.events)
                if delta or update.logprobs:
                    out.append(encoder.choice(index, delta, logprobs=update.logprobs))
                if update.finish_reason is not None:
                    out.append(encoder.choice(index, {}, update.finish_reason, extra=update.unmet))
            if out:
                yield b"".join(out)
    if stream.failure is not None:
        yield data_event(stream.failure.body)
    yield DONE


async def stream_completion(turn: Turn) -> EventStream:
    """Open the backend stream (errors before the first byte are plain HTTP
    errors) and relay it as parsed SSE chunks."""
    stream = await turn.stream()
    return EventStream(_chunks(stream, ChunkEncoder(turn.model)), background=BackgroundTask(stream.release))
