"""The one way a chat request becomes a prompt (`render_prompt`), and the
worker process that renders prompts for the gateway (`python -m
gateway.templates.prompt_render MEMORY_BYTES`).

A render runs a template from a model's files or its server: untrusted
code in jinja's sandbox, which bounds what it may touch but not how long
it loops or how much it writes. So the gateway renders in worker processes
(`render_pool.py`) that it can kill: a worker reads jobs from stdin and
writes replies to stdout, each one after its length (4 bytes, big-endian),
and caps its own address space, so that a template that builds a huge
string gets a MemoryError instead of the host's memory. A job is a JSON
document; a reply is a prompt's UTF-8 text after `PROMPT`, or a JSON
document after `DOCUMENT` (`reply_bytes`): a prompt sent as JSON text was
escaped and read back character by character, a fifth of a long turn's
render (bench/README.md, "Performance IV: template render").
It imports nothing but the template code, to start fast and small.
"""

from __future__ import annotations

import contextlib
import fcntl
import resource
import sys
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from gateway.templates.chat_messages import RememberedMessages
from gateway.templates.chat_template import ChatTemplate, ChatTemplateError, PromptTooLong, RememberedJson

LENGTH_BYTES = 4
PIPE_BYTES = 1 << 20  # a worker's pipes, and the gateway's read buffer (Linux's default pipe-max-size)
PROMPT, DOCUMENT = b"P", b"J"  # a reply's first byte: what follows it
BASE_MEMORY_BYTES = 1 << 30  # a worker's address space, before what its longest prompt needs (render_pool.py)
_CACHED_TEMPLATES = 16


def render_prompt(template: ChatTemplate, chat: dict[str, Any]) -> str:
    """The prompt for a chat request, as `apply_chat_template` renders it;
    `add_generation_prompt: false` in the request (vLLM's extension) leaves
    the assistant's turn unopened."""
    kwargs = chat.get("chat_template_kwargs")
    return template.render(
        chat["messages"],
        tools=chat.get("tools"),
        documents=chat.get("documents"),
        add_generation_prompt=chat.get("add_generation_prompt") is not False,
        **(kwargs if isinstance(kwargs, dict) else {}),
    )


@dataclass(frozen=True)
class Held:
    """What a worker holds from its last render: the request's tools, and
    each of its messages, as JSON."""

    tools: bytes = b"null"
    messages: list[bytes] = field(default_factory=list)


@dataclass(frozen=True)
class RenderJob:
    """What a worker is asked: `head` (the template, the bound, the request
    but its tools and messages; no request: compile the template only),
    the tools and each message as JSON."""

    head: dict[str, Any]
    tools: bytes
    messages: list[bytes]

    def sent(self, held: Held) -> bytes:
        """The job as written to a worker that holds `held` from its last
        render: the messages this request starts with are not sent again
        (`kept`), only the ones after them, and the tools only when they
        differ. An agent sends its whole conversation and its tools each
        turn: this spares the worker reading them, converting the messages
        (chat_messages.RememberedMessages) and writing the tools' JSON
        (chat_template.RememberedJson)."""
        document: dict[str, Any] = {**self.head, "kept": 0, "messages": []}
        if self.head["chat"] is not None:
            kept = 0
            for new, old in zip(self.messages, held.messages, strict=False):
                if new != old:
                    break
                kept += 1
            document["kept"] = kept
            document["messages"] = [orjson.Fragment(message) for message in self.messages[kept:]]
            if self.tools != held.tools:
                document["tools"] = orjson.Fragment(self.tools)
        return orjson.dumps(document)

    def held(self, held: Held) -> Held:
        """What a worker holds after this job."""
        return held if self.head["chat"] is None else Held(self.tools, self.messages)


def render_job(template: ChatTemplate, chat: dict[str, Any] | None, max_prompt_chars: int) -> RenderJob:
    """A worker's job: render `chat` with `template`, up to `max_prompt_chars`;
    with no `chat`, compile the template only (jinja runs a template's
    constant expressions as it compiles: chat_template.ChatTemplate.compile)."""
    source = {"sources": template.sources, "bos_token": template.bos_token, "eos_token": template.eos_token}
    head = {"template": source, "where": template.where, "max_chars": max_prompt_chars, "chat": None}
    if chat is None:
        return RenderJob(head, b"null", [])
    head["chat"] = {key: value for key, value in chat.items() if key not in ("messages", "tools")}
    messages = [orjson.dumps(message) for message in chat["messages"]]
    return RenderJob(head, orjson.dumps(chat.get("tools")), messages)


def framed(document: bytes) -> bytes:
    return len(document).to_bytes(LENGTH_BYTES, "big") + document


def reply_bytes(reply: dict[str, Any]) -> bytes:
    """A reply as the worker writes it: the prompt's text, else the document."""
    prompt = reply.get("prompt")
    if isinstance(prompt, str):
        try:
            return PROMPT + prompt.encode()
        except UnicodeEncodeError:  # a lone surrogate, from a template's "\\ud800"
            reply = {"error": "template", "problem": "the template wrote text that is not Unicode (a lone surrogate)"}
    return DOCUMENT + orjson.dumps(reply)


def read_reply(data: bytes) -> dict[str, Any]:
    """What `reply_bytes` wrote (`{}` for anything else)."""
    if data[:1] == PROMPT:
        return {"prompt": data[1:].decode()}
    reply = orjson.loads(data[1:]) if data[:1] == DOCUMENT else None
    return reply if isinstance(reply, dict) else {}


class _Worker:
    """A worker's templates (compiled once each) and the conversation of
    its last job, which the next job may start with (`RenderJob.sent`)."""

    def __init__(self) -> None:
        self.templates: dict[bytes, ChatTemplate] = {}
        self.conversation: list[Any] = []
        self.tools: Any = None
        self.template_messages = RememberedMessages()
        self.tojson = RememberedJson()

    def reply(self, job: dict) -> dict[str, Any]:
        """`{"prompt": …}` (`{"compiled": true}` for a job with no chat), or
        `{"error": "template" | "too_long" | "memory", "problem": …}`."""
        chat = job["chat"]
        if chat is not None:
            if job["kept"] > len(self.conversation):
                raise SystemExit("a job kept messages this worker does not hold")  # the gateway starts another
            self.conversation = self.conversation[: job["kept"]] + job["messages"]
            if "tools" in job:
                self.tools = job["tools"]
                self.tojson.keep(self.tools)
        try:
            template = self._template(job)
            if chat is None:
                return {"compiled": True}
            return {"prompt": render_prompt(template, {**chat, "messages": self.conversation, "tools": self.tools})}
        except PromptTooLong as error:
            return {"error": "too_long", "problem": error.problem}
        except ChatTemplateError as error:
            return {"error": "template", "problem": error.problem}
        except MemoryError:
            return {"error": "memory", "problem": "the render ran out of memory"}

    def _template(self, job: dict) -> ChatTemplate:
        key = orjson.dumps([job["template"], job["where"], job["max_chars"]])
        if key not in self.templates:
            if len(self.templates) >= _CACHED_TEMPLATES:
                self.templates.clear()
            source = job["template"]
            template = ChatTemplate(
                source["sources"],
                bos_token=source["bos_token"],
                eos_token=source["eos_token"],
                where=job["where"],
                max_prompt_chars=job["max_chars"],
            )
            template.template_messages = self.template_messages
            template.use_tojson(self.tojson)
            self.templates[key] = template
        return self.templates[key]


def _serve(jobs: BinaryIO, replies: BinaryIO) -> None:
    """Answer jobs until stdin closes (the gateway has gone)."""
    worker = _Worker()
    while True:
        header = jobs.read(LENGTH_BYTES)
        if len(header) < LENGTH_BYTES:
            return
        job = orjson.loads(jobs.read(int.from_bytes(header, "big")))
        replies.write(framed(reply_bytes(worker.reply(job))))
        replies.flush()


def _widen(stream: BinaryIO) -> None:
    """The pipe under `stream` made PIPE_BYTES wide where Linux lets it
    (F_SETPIPE_SZ), so that a long prompt or job crosses it in one piece
    rather than in 64 KB ones, each a turn of the gateway's loop."""
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # not a pipe, over pipe-max-size, or past the user's pipe pages
            fcntl.fcntl(stream.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


if __name__ == "__main__":
    memory = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    _widen(sys.stdin.buffer)
    _widen(sys.stdout.buffer)
    _serve(sys.stdin.buffer, sys.stdout.buffer)
