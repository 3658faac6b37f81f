"""The round trip (tests/round_trip.py) measured over every chat template
fixture, as tests/parsers/test_round_trip.py runs it:

    python -m tests.round_trip_report [--splits N]

prints per template the turns it writes (of the conversation shapes), how
many parse back and how many do not, with the first difference of each
failure; then the totals, and how many parses differed between the
streamed text (one character at a time, and N random splits from a fixed
seed) and the whole. Exit status 1 if any written turn fails.
"""

from __future__ import annotations

import argparse
import random
import sys

from tests.parsers.test_round_trip import MODELS
from tests.round_trip import assistant_turn, difference, model_shapes, parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=50, help="random splits per turn (default 50)")
    options = parser.parse_args(argv)
    chance = random.Random(43)
    written = passed = split_differences = 0
    for file, model in sorted(MODELS.items()):
        failures: list[str] = []
        mine = 0
        for name, shape in model_shapes(file, model).items():
            turn = assistant_turn(file, model, shape)
            if turn.refused is not None:
                continue
            mine += 1
            whole = parse(model, shape, turn)
            found = difference(whole, shape)
            length = len(turn.text)
            splits = [range(1, length)] + [
                chance.sample(range(1, length), chance.randint(1, min(12, length - 1))) for _ in range(options.splits)
            ]
            split_differences += sum(parse(model, shape, turn, cuts) != whole for cuts in splits if length > 1)
            if found is None:
                passed += 1
            else:
                failures.append(f"    {name}: {found}")
        written += mine
        print(f"{file}: {mine} written, {mine - len(failures)} passed, {len(failures)} failed")
        for failure in failures:
            print(failure)
    share = 100 * passed / written if written else 100.0
    print(f"\ntotal: {written} written turns, {passed} passed ({share:.1f} %), {written - passed} failed")
    print(f"streamed parses that differ from the whole: {split_differences}")
    return 0 if passed == written and not split_differences else 1


if __name__ == "__main__":
    sys.exit(main())
