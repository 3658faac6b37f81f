"""A scripted model for long agent runs: it works through a number of
rounds, one tool call each (what `call_for` says for round N), answers
the agents' compaction prompts with a summary that says how many rounds
are done, and reports a prompt size that grows with the tool results in
the conversation, so that the agent's own auto-compaction fires. It reads
the conversation alone (a compacted one too), as the fake backend gives
it the chat request that reached it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.fake_backend import FakeBackend

ROUND = re.compile(r"round[ _](\d+)")  # in each round's call: `echo round 7`, `round_7.png`
SUMMARY = re.compile(r"ROUNDS DONE (\d+)")


def tool_call(name: str, arguments: dict) -> str:
    """A Qwen3 tool call, as the model writes it."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def text_of(content: object) -> str:
    return content if isinstance(content, str) else json.dumps(content)


class Rounds:
    """`count` rounds; `call_for(n)` is round n's (tool name, arguments),
    which name it (`round n` or `round_n`). `compacting(text)`
    tells the agent's summarisation prompt; the summary is `summary`
    formatted with the rounds done. The prompt is reported as `base`
    tokens plus `per_result` for each tool result in it."""

    def __init__(
        self,
        fake: FakeBackend,
        count: int,
        call_for: Callable[[int], tuple[str, dict]],
        compacting: Callable[[str], bool],
        summary: str = "ROUNDS DONE {done}",
        base: int = 2000,
        per_result: int = 1000,
    ) -> None:
        self.fake, self.count, self.call_for, self.compacting = fake, count, call_for, compacting
        self.summary, self.base, self.per_result = summary, base, per_result
        self.summaries = 0
        fake.answer = self.answer

    def done(self, messages: list[dict]) -> int:
        """Rounds done: one past the last round whose call is in the
        conversation (its result came back: the request follows it), or
        what a summary says, whichever is more."""
        done = 0
        for message in messages:
            if message["role"] in ("user", "system") and (said := SUMMARY.search(text_of(message["content"]))):
                done = max(done, int(said.group(1)))
            for call in message.get("tool_calls") or ():
                if called := ROUND.findall(call["function"]["arguments"]):  # the last: a path's folders may say "round"
                    done = max(done, int(called[-1]) + 1)
        return done

    def answer(self, body: dict) -> str:
        messages = body["messages"]
        results = sum(1 for message in messages if message["role"] == "tool")
        prompt = self.base + self.per_result * results
        self.fake.usage = {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}
        done = self.done(messages)
        if messages[-1]["role"] == "user" and self.compacting(text_of(messages[-1]["content"])):
            self.summaries += 1
            return "<think>\nSummarise.\n</think>\n\n" + self.summary.format(done=done)
        if done >= self.count:
            return f"<think>\nFinished.\n</think>\n\nAll {self.count} rounds done."
        name, arguments = self.call_for(done)
        return f"<think>\nRound {done}.\n</think>\n\n" + tool_call(name, arguments)
