"""Streamed chat completions: a turn's updates rendered as OpenAI
`chat.completion.chunk` events.

Per upstream chunk and choice at most one chunk goes out (plus the finish
chunk). A stream the backend cuts short still sends what the parsers held,
then ends with an OpenAI error event before `[DONE]`.
"""

from __future__ import annotations

import asyncio
from functools import partial

from starlette.background import BackgroundTask

from gateway.api.chunks import ChoiceStream, ChunkEncoder
from gateway.api.sse import DONE, EventStream, data_event
from gateway.api.turns import Turn, TurnStream, TurnUpdate, UsageUpdate


async def _chunks(stream: TurnStream, encoder: ChunkEncoder, out: EventStream) -> None:
    plan = stream.turn.plan
    choices: dict[int, ChoiceStream] = {}

    def deliver(batch: list[TurnUpdate | UsageUpdate]) -> asyncio.Future[None] | None:
        events: list[bytes] = []  # one write per piece of the backend's stream
        for update in batch:
            if type(update) is UsageUpdate:
                events.append(encoder.usage(update.usage))
                continue
            index = update.choice
            choice = choices.get(index)
            if choice is None:
                choice = choices[index] = ChoiceStream(plan.call_id, plan.reasoning_keys)
            delta = choice.delta(update.events)
            if delta or update.logprobs:
                events.append(encoder.choice(index, delta, logprobs=update.logprobs))
            if update.finish_reason is not None:
                events.append(encoder.choice(index, {}, update.finish_reason, extra=update.unmet))
        return out.write(b"".join(events)) if events else None

    await stream.run(deliver)
    if stream.failure is not None:
        await out.send(data_event(stream.failure.body))
    await out.send(DONE)


async def stream_completion(turn: Turn) -> EventStream:
    """Open the backend stream (errors before the first byte are plain HTTP
    errors) and relay it as parsed SSE chunks."""
    stream = await turn.stream()
    produce = partial(_chunks, stream, ChunkEncoder(turn.model))
    return EventStream(produce, background=BackgroundTask(stream.release))
