"""Template mode's prompts, rendered off the event loop within the model's
bounds (docs/template-mode.md#bounds): at most `render_workers` at once,
each in a worker process (`prompt_render.py`) that is killed when it runs
past `render_timeout` (or its caller is cancelled), writing at most
`max_prompt_chars`. Workers start on first use and are kept for the next
render; a killed one is replaced by a fresh one when next needed.

A render holds a worker, and no thread or lock of the gateway's, so the
event loop (`/health`, every other stream) keeps answering whatever the
template does. The pipes are asyncio's own streams, with the loop's timer
for the deadline (`asyncio.timeout`): anyio's streams, semaphore and cancel
scopes cost a third of the gateway's CPU per render (bench/README.md,
"Chunks on a decode step's clock, and template mode's renders").
"""

from __future__ import annotations

import asyncio
import sys

from gateway.ops.errors import ApiError
from gateway.templates.chat_template import ChatTemplate, ChatTemplateError
from gateway.templates.prompt_render import (
    BASE_MEMORY_BYTES,
    LENGTH_BYTES,
    PIPE_BYTES,
    Held,
    RenderJob,
    framed,
    read_reply,
    render_job,
)

WORKER_MODULE = "gateway.templates.prompt_render"
MEMORY_BYTES_PER_PROMPT_CHAR = 16  # a worker's address space: BASE_MEMORY_BYTES, plus this a prompt character
_WORKER_GONE = (asyncio.IncompleteReadError, ConnectionError)


def render_memory_bytes(max_prompt_chars: int) -> int:
    """The address space a render worker caps itself at."""
    return BASE_MEMORY_BYTES + MEMORY_BYTES_PER_PROMPT_CHAR * max_prompt_chars


class _Worker:
    """One worker process, its jobs written to its stdin and its replies
    read from its stdout, and the messages it holds from its last job."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.jobs = process.stdin
        self.replies = process.stdout
        self.held = Held()

    @classmethod
    async def start(cls, memory_bytes: int) -> _Worker:
        command = [sys.executable, "-m", WORKER_MODULE, str(memory_bytes)]
        pipe = asyncio.subprocess.PIPE
        return cls(await asyncio.create_subprocess_exec(*command, stdin=pipe, stdout=pipe, limit=PIPE_BYTES))

    async def ask(self, job: RenderJob) -> dict:
        """The worker's reply to `job`; a worker whose caller does not get
        its reply is stopped (RenderPool._run), and what it holds with it."""
        self.jobs.write(framed(job.sent(self.held)))
        self.held = job.held(self.held)
        await self.jobs.drain()
        length = int.from_bytes(await self.replies.readexactly(LENGTH_BYTES), "big")
        return read_reply(await self.replies.readexactly(length))

    async def stop(self) -> None:
        """Kill the worker at once, and reap it (even for a caller being cancelled)."""
        self.jobs.close()
        if self.process.returncode is None:
            self.process.kill()
        await asyncio.shield(self.process.wait())


class RenderPool:
    """A model's render workers, and its bounds on a render."""

    def __init__(self, workers: int, timeout: float, max_prompt_chars: int) -> None:
        self.timeout = timeout
        self.max_prompt_chars = max_prompt_chars
        self._memory_bytes = render_memory_bytes(max_prompt_chars)
        self._slots = asyncio.Semaphore(workers)
        self._idle: list[_Worker] = []
        self._closed = False

    async def render(self, template: ChatTemplate, chat: dict, model: str) -> str:
        """The prompt for `chat`; ChatTemplateError when the template refuses
        it, ApiError 400 when it breaks a bound."""
        job = render_job(template, chat, self.max_prompt_chars)
        async with self._slots:
            reply = await self._run(job)
        if isinstance(reply.get("prompt"), str):
            return reply["prompt"]
        problem = str(reply.get("problem", ""))
        if reply.get("error") == "template":
            raise ChatTemplateError(template.where, problem)
        if reply.get("error") == "too_long":
            message = (
                f"the prompt for model {model!r} is longer than its max_prompt_chars "
                f"({self.max_prompt_chars} characters)"
            )
            raise ApiError(400, message, param="messages", code="prompt_too_long")
        if reply.get("error") == "timeout":
            problem = f"the prompt did not render within its render_timeout ({self.timeout:g} s)"
            raise _render_failed(model, problem, "render_timeout")
        raise _render_failed(model, f"the render stopped: {problem or 'the worker ended'}", "render_failed")

    async def compile(self, template: ChatTemplate, model: str) -> None:
        """Compile `template` in a worker, within the render bounds
        (compiling runs its constant expressions: ChatTemplate.compile);
        ChatTemplateError saying why it cannot be used. The worker keeps
        it compiled for the renders it then serves."""
        job = render_job(template, None, self.max_prompt_chars)
        async with self._slots:
            reply = await self._run(job)
        if reply.get("compiled") is True:
            return
        error = reply.get("error")
        if error == "template":
            raise ChatTemplateError(template.where, str(reply.get("problem", "")))
        if error == "timeout":
            problem = f"the chat template did not compile within its render_timeout ({self.timeout:g} s)"
        elif error == "memory":
            problem = f"the chat template ran out of memory as it compiled ({self._memory_bytes >> 20} MiB)"
        else:
            problem = "the chat template did not compile: the worker ended"
        raise ChatTemplateError(template.where, problem)

    async def _run(self, job: RenderJob) -> dict:
        """The reply of an idle (or a new) worker; a worker that does not
        answer within the deadline (`{"error": "timeout"}`), or whose caller
        is cancelled, is killed."""
        worker = self._idle.pop() if self._idle else await _Worker.start(self._memory_bytes)
        timer = asyncio.timeout(self.timeout)
        try:
            async with timer:
                reply = await worker.ask(job)
        except TimeoutError:
            await worker.stop()
            if not timer.expired():
                raise
            return {"error": "timeout"}
        except _WORKER_GONE:
            await worker.stop()
            return {"error": "gone"}
        except BaseException:
            await worker.stop()
            raise
        if self._closed or reply.get("error") == "memory":
            await worker.stop()
        else:
            self._idle.append(worker)
        return reply

    async def close(self) -> None:
        """Stop the idle workers; a busy one stops when its render ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for worker in idle:
            await worker.stop()


def _render_failed(model: str, problem: str, code: str) -> ApiError:
    message = f"the chat template of model {model!r} could not render the request: {problem}"
    return ApiError(400, message, param="messages", code=code)
