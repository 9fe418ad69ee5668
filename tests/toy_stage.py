"""A throwaway LLM stage built only from a declaration, the way docs/architecture.md says to add one.

It asks how many letters a word has. Everything around the asking (its tables, run claim and resume, journal,
merge, history of replaced failures, gate, status, `peras runs`) comes from the engine, its flow and command from
`peras ask` (flows/ask.py, cli/commands/ask.py: `peras ask tests.toy_stage --word cat`); this file is all the stage
is. tests/test_stage_declaration.py runs it end to end against the scripted server, in this process and in a child
process it kills (`python -m tests.toy_stage WAREHOUSE BASE_URL WORD...`).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from flows.ask import ask
from peras.settings import Settings, load_settings
from tasks.engine.endpoint import Endpoint
from tasks.engine.running import HeldItems, StageOutcome
from tasks.engine.runs import Gate, RunClaim
from tasks.engine.spec import Answer, Ask, AskFn, ParsedValue, RunIdentity
from tasks.engine.stage import StageDeclaration, columns, declare
from tasks.engine.stages import ask_outcome

TOY = declare(
    StageDeclaration(
        kind="toy",
        label="toy run",
        runs_table="toy_runs",
        run_id="toy_run_id",
        fixed=columns("model, seed bigint"),
        answers_table="toy_answers",
        history_table="toy_answer_history",
        keys=columns("word"),
        values=columns("n_letters integer"),
        failure_group=(),
        failure_label="toy",
        item_name=("word %s", ("word",)),
        differs="model, seed or prompt",
    )
)

PROMPT = "How many letters has the word {word}? Answer with the number only."
NUMBER = re.compile(r"^\s*(\d+)\s*\.?\s*$")


def read_number(text: str) -> ParsedValue:
    """The number a model answered, or why the answer is not one."""
    found = NUMBER.match(text)
    return ParsedValue(int(found.group(1)), True, "") if found else ParsedValue(None, False, "not a number")


@dataclass(frozen=True)
class WordItem:
    """One word to ask about."""

    word: str

    @property
    def key(self) -> tuple[str]:
        """What identifies the item within a run (the declaration's keys)."""
        return (self.word,)


@dataclass
class ToyStage:
    """A word to one request, the answer to one outcome row."""

    seed: int
    kind: str = "toy"

    async def handle(self, item: WordItem, ask: AskFn) -> dict[str, Any]:
        """Ask for the word's length; a failure keeps no number."""
        spec = Ask(
            [{"role": "user", "content": PROMPT.format(word=item.word)}],
            {"temperature": 0.0, "seed": self.seed, "max_tokens": 8},
            "toy",
            read_number,
        )

        def read(answer: Answer) -> dict[str, Any]:
            return {"n_letters": answer.parsed.value if answer.ok else None}

        return await ask_outcome(ask, spec, {"word": item.word}, ("n_letters",), read)


@dataclass
class ToyRecipe(HeldItems):
    """The toy stage's part of the one flow body."""

    run_name: str
    seed: int
    planned: list[WordItem]
    gate: Gate = Gate("run not published (its answers are kept)")
    personalities: tuple[()] = ()

    def configure(self, endpoint: Endpoint) -> int:
        """Nothing to configure but the seed."""
        return self.seed

    def claim(self, config: int) -> RunClaim:
        """A run is fixed by its model, seed and prompt."""
        values = {"seed": config, "scope": {"words": [item.word for item in self.planned]}}
        return RunClaim(TOY, self.run_name, values, {"prompt": PROMPT})

    def stage(self, config: int) -> ToyStage:
        """The stage object."""
        return ToyStage(config)

    def planned_frame(self) -> pl.DataFrame:
        """The planned words, for the gate."""
        return pl.DataFrame({"word": [item.word for item in self.planned]}, schema={"word": pl.Utf8})

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """Nothing is stored before asking."""


DECLARATION = TOY  # what `peras ask tests.toy_stage` (and PERAS_STAGE_MODULES=tests.toy_stage) finds


@dataclass(frozen=True)
class Parameters:
    """What a toy call takes: each field an option of `peras ask tests.toy_stage`."""

    words: list[str] = field(metadata={"option": "--word", "help": "A word to ask about (repeatable)."})
    run_name: str = field(default="toy", metadata={"help": "Name of the run (re-using a name resumes it)."})
    seed: int = field(default=0, metadata={"help": "Seed sent with every request."})


def recipe(settings: Settings, parameters: Parameters) -> ToyRecipe:
    """The recipe of one call: every word planned."""
    return ToyRecipe(parameters.run_name, parameters.seed, [WordItem(word) for word in parameters.words])


def summarize(outcome: StageOutcome[int], parameters: Parameters) -> dict[str, Any]:
    """The run and the engine's counts."""
    return {"run_id": outcome.run.run_id, "n_failures": outcome.n_failures, **outcome.stats}


def toy(
    words: list[str], run_name: str = "toy", seed: int = 0, retry_failed: bool = False, settings: Settings | None = None
) -> dict[str, Any]:
    """Ask every word's length; gate; publish: the `ask` flow, as `peras ask tests.toy_stage --word ...` runs it."""
    given = {"words": list(words), "run_name": run_name, "seed": seed}
    return ask("tests.toy_stage", given, chunk_size=2, retry_failed=retry_failed, settings=settings)


def main() -> None:
    """A toy run in a process of its own (to be killed): WAREHOUSE BASE_URL WORD... (WAREHOUSE '-': PERAS_WAREHOUSE)."""
    warehouse, base_url, *words = sys.argv[1:]
    where = None if warehouse == "-" else Path(warehouse)
    settings = load_settings(warehouse=where, base_urls=[base_url], model="fake-model", concurrency=1)
    toy(words, settings=settings)


if __name__ == "__main__":
    main()
