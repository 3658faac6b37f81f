"""Template analysis (`analysis.derive`) in a process of its own,
bounded as template mode's renders are (docs/derived-parsers.md): the
template is code from a model's files or its server, which jinja's sandbox
keeps from touching anything but not from looping or writing without end.
So the analysis runs in `python -m gateway.templates.derivation_process
MEMORY_BYTES`, which caps its own address space and is killed past the
model's `render_timeout` (counted once it has started and read its job,
as template mode's workers are started outside it); a template that runs
past either is refused with the reason, and its model served as plain
content.

The job (the template's sources and tokens) goes in on stdin as JSON; the
`Derivation` comes back on stdout, pickled by this same code. The same
worker checks that a template file compiles (`compile_within`), at
start-up and at a reload, since compiling runs the template's constant
expressions (ChatTemplate.compile).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import subprocess
import sys

import orjson

from gateway.templates.analysis import derive
from gateway.templates.chat_template import ChatTemplate, ChatTemplateError
from gateway.templates.derivation import Derivation
from gateway.templates.prompt_render import BASE_MEMORY_BYTES

_WORKER_MODULE = "gateway.templates.derivation_process"
_READY = b"+"  # the worker's first byte: started, job read
_COMPILED = "compiled"  # a compile-only job's answer when the template compiled


def derive_within(template: ChatTemplate, seconds: float) -> Derivation:
    """`derive(template)`, or a Derivation refusing it with the reason when
    it does not compile, or runs past `seconds` or out of memory."""
    done = _in_worker(_job(template, compile_only=False), seconds, BASE_MEMORY_BYTES)
    if isinstance(done, Derivation):
        return done
    if done == "timeout":
        return _refused(template, f"the analysis did not finish within its render_timeout ({seconds:g} s)")
    return _refused(template, str(done))


def compile_within(template: ChatTemplate, seconds: float, memory_bytes: int) -> None:
    """Compile `template` in a worker capped at `memory_bytes` and killed
    past `seconds`; ChatTemplateError saying why it cannot be used."""
    done = _in_worker(_job(template, compile_only=True), seconds, memory_bytes)
    if done == "timeout":
        raise ChatTemplateError(
            template.where, f"the chat template did not compile within its render_timeout ({seconds:g} s)"
        )
    if done != _COMPILED:
        raise ChatTemplateError(template.where, str(done))


def _job(template: ChatTemplate, *, compile_only: bool) -> dict:
    return {
        "sources": template.sources,
        "bos_token": template.bos_token,
        "eos_token": template.eos_token,
        "where": template.where,
        "special_tokens": sorted(template.special_tokens),
        "compile_only": compile_only,
    }


def _in_worker(job: dict, seconds: float, memory_bytes: int) -> object:
    """What the worker answers `job` with (a Derivation, `_COMPILED` or a
    problem), or "timeout" when it runs past `seconds`."""
    command = [sys.executable, "-m", _WORKER_MODULE, str(memory_bytes)]
    reading, writing = os.pipe()
    with subprocess.Popen(command, stdin=reading, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as worker:
        assert worker.stdout is not None
        os.close(reading)
        with contextlib.suppress(BrokenPipeError), open(writing, "wb") as jobs:  # a gone worker: below
            jobs.write(orjson.dumps(job))
        os.read(worker.stdout.fileno(), len(_READY))  # started and read the job: the deadline runs from here
        try:
            output, errors = worker.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.communicate()
            return "timeout"
    if worker.returncode != 0 or not output:
        last_line = (errors.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return f"the analysis stopped: {last_line}"
    found: object = pickle.loads(output)  # written by this module's own worker, below
    return found


def _refused(template: ChatTemplate, reason: str) -> Derivation:
    return Derivation(template.where, refusals=[reason])


def _derive_job(job: dict) -> object:
    """The template compiled (`_COMPILED` for a compile-only job, the
    problem if it does not) and analysed."""
    template = ChatTemplate(
        job["sources"],
        bos_token=job["bos_token"],
        eos_token=job["eos_token"],
        where=job["where"],
        compile_now=False,
        special_tokens=job["special_tokens"],
    )
    try:
        template.compile()
        return _COMPILED if job["compile_only"] else derive(template)
    except ChatTemplateError as error:
        return error.problem
    except MemoryError:
        what = "the chat template as it compiled" if job["compile_only"] else "the analysis"
        return f"{what} ran out of memory ({int(sys.argv[1]) >> 20} MiB)"


if __name__ == "__main__":
    memory = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    read = orjson.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(_READY)
    sys.stdout.buffer.flush()
    sys.stdout.buffer.write(pickle.dumps(_derive_job(read)))
