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
`Derivation` comes back on stdout, pickled by this same code.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import subprocess
import sys

import orjson

from gateway.templates.analysis import Derivation, derive
from gateway.templates.chat_template import ChatTemplate
from gateway.templates.prompt_render import BASE_MEMORY_BYTES

_WORKER_MODULE = "gateway.templates.derivation_process"
_READY = b"+"  # the worker's first byte: started, job read


def derive_within(template: ChatTemplate, seconds: float) -> Derivation:
    """`derive(template)`, or a Derivation refusing it with the reason when
    it runs past `seconds` or out of memory."""
    job = {
        "sources": template.sources,
        "bos_token": template.bos_token,
        "eos_token": template.eos_token,
        "where": template.where,
    }
    command = [sys.executable, "-m", _WORKER_MODULE, str(BASE_MEMORY_BYTES)]
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
            return _refused(template, f"the analysis did not finish within its render_timeout ({seconds:g} s)")
    if worker.returncode != 0 or not output:
        last_line = (errors.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return _refused(template, f"the analysis stopped: {last_line}")
    found: Derivation = pickle.loads(output)  # written by this module's own worker, below
    return found


def _refused(template: ChatTemplate, reason: str) -> Derivation:
    return Derivation(template.where, refusals=[reason])


def _derive_job(job: dict) -> Derivation:
    template = ChatTemplate(job["sources"], bos_token=job["bos_token"], eos_token=job["eos_token"], where=job["where"])
    try:
        return derive(template)
    except MemoryError:
        return _refused(template, f"the analysis ran out of memory ({BASE_MEMORY_BYTES >> 20} MiB)")


if __name__ == "__main__":
    memory = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    read = orjson.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(_READY)
    sys.stdout.buffer.flush()
    sys.stdout.buffer.write(pickle.dumps(_derive_job(read)))
