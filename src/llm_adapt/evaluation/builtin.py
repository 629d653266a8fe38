"""The built-in tasks, written by this project (no dataset copied): seeded arithmetic word problems.

`builtin-arith` asks for the number (generative, exact match); `builtin-mc` offers four numbers and
scores each by loglikelihood. `python -m llm_adapt.evaluation.builtin` rewrites the shipped JSONL;
a unit test checks the shipped files are exactly what this seed produces.
"""

from __future__ import annotations

import json
import random
from importlib.resources import files
from pathlib import Path

SEED = 20261130
TEST_ITEMS = 300
FEWSHOT_ITEMS = 20
NAMES = ["Ana", "Ben", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kira", "Liam", "Mei", "Nora"]
THINGS = ["apples", "books", "coins", "marbles", "pencils", "stamps", "shells", "cards", "eggs", "balloons"]


def _problem(rng: random.Random) -> tuple[str, int]:
    """One word problem and its answer: a counting sequence to continue, or one gain."""
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    if rng.random() < 0.5:
        step = rng.choice([1, 2, 10])
        start = rng.randint(1, 9) * step
        seq = ", ".join(str(start + step * k) for k in range(4))
        return f"{name} counts {thing}: {seq}. What number comes next?", start + 4 * step
    a = rng.randint(2, 12)
    return f"{name} has {a} {thing} and gets 1 more. How many {thing} does {name} have now?", a + 1


def _choices(rng: random.Random, answer: int) -> tuple[list[str], int]:
    """Four distinct positive numbers, the answer among them at a seeded position."""
    wrong = rng.sample([x for x in range(max(1, answer - 5), answer + 6) if x != answer], 3)
    options = wrong + [answer]
    rng.shuffle(options)
    return [str(x) for x in options], options.index(answer)


def items(count: int, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(count):
        question, answer = _problem(rng)
        choices, label = _choices(rng, answer)
        rows.append({"id": i, "question": question, "answer": str(answer), "choices": choices, "label": label})
    return rows


def task_dir() -> Path:
    return Path(str(files("llm_adapt") / "data" / "tasks"))


def render(dest: Path) -> Path:
    """Copy the task YAMLs to `dest` with the data directory filled in (lm-eval needs absolute data paths)."""
    dest.mkdir(parents=True, exist_ok=True)
    for yaml in task_dir().glob("*.yaml"):
        (dest / yaml.name).write_text(yaml.read_text().replace("{data_dir}", str(task_dir())))
    return dest


def write(dest: Path) -> None:
    rng = random.Random(SEED)
    for split, count in (("test", TEST_ITEMS), ("fewshot", FEWSHOT_ITEMS)):
        rows = items(count, rng)
        (dest / f"arith_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    write(task_dir())
