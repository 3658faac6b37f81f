"""Template analysis (`template_analysis.derive`) in a process of its own,
bounded as template mode's renders are (docs/derived-parsers.md): the
template is code from a model's files or its server, which jinja's sandbox
keeps from touching anything but not from looping or writing without end.
So the analysis runs in `python -m gateway.backend.derivation_process
MEMORY_BYTES`, which caps its own address space and is killed past the
model's `render_timeout`; a template that runs past either is refused with
the reason, and its model served as plain content.

The job (the template's sources and tokens) goes in on stdin as JSON; the
`Derivation` comes back on stdout, pickled by this same code.
"""

from __future__ import annotations

import pickle
import resource
import subprocess
import sys

import orjson

from gateway.backend.chat_template import ChatTemplate
from gateway.backend.prompt_render import BASE_MEMORY_BYTES
from gateway.backend.template_analysis import Derivation, derive

_WORKER_MODULE = "gateway.backend.derivation_process"


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
    try:
        done = subprocess.run(command, input=orjson.dumps(job), capture_output=True, timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        return _refused(template, f"the analysis did not finish within its render_timeout ({seconds:g} s)")
    if done.returncode != 0:
        last_line = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return _refused(template, f"the analysis stopped: {last_line}")
    found: Derivation = pickle.loads(done.stdout)  # written by this module's own worker, below
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
    sys.stdout.buffer.write(pickle.dumps(_derive_job(orjson.loads(sys.stdin.buffer.read()))))
