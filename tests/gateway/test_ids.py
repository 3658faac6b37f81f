"""The ids parsegate makes (gateway/ops/ids.py): unguessable digits, never
the same twice, in one process, across its threads, or in a forked one."""

from __future__ import annotations

import os
import re
import threading

from gateway.ops.ids import RANDOM_BYTES_READ, UNGUESSABLE, new_id


def test_an_id_is_its_prefix_and_the_digits_asked_for() -> None:
    assert re.fullmatch(r"resp_[0-9a-f]{48}", new_id("resp_", UNGUESSABLE))
    assert re.fullmatch(r"call_[0-9a-f]{24}", new_id("call_"))
    assert re.fullmatch(r"[0-9a-f]{32}", new_id("", 32))


def test_ids_do_not_repeat_past_a_read_of_random_bytes() -> None:
    count = 3 * RANDOM_BYTES_READ // 12 + 7  # several reads, and an id that straddles one
    ids = [new_id("call_") for _ in range(count)]
    assert len(set(ids)) == count


def test_threads_never_get_the_same_digits() -> None:
    made: list[list[str]] = [[] for _ in range(4)]

    def make(into: list[str]) -> None:
        into.extend(new_id("", 32) for _ in range(2000))

    threads = [threading.Thread(target=make, args=(into,)) for into in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [made_id for ids in made for made_id in ids]
    assert len(set(every)) == len(every)


def test_a_forked_worker_makes_ids_of_its_own() -> None:
    new_id("msg_")  # the parent has random bytes at hand
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        os.write(writing, " ".join(new_id("", 32) for _ in range(8)).encode())
        os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        theirs = pipe.read().split()
    os.waitpid(child, 0)
    ours = [new_id("", 32) for _ in range(8)]
    assert len(theirs) == 8
    assert not set(theirs) & set(ours)
