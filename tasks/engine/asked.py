"""A stage with no flow or command of its own: `peras ask KIND` and the `ask` flow (flows/ask.py) run it.

A stage module asked this way holds, besides its stage object and recipe (docs/architecture.md, "Adding an LLM
stage"):
- `Parameters`: a dataclass, each field one option of `peras ask KIND` (`--field-name`, or the field's
  `metadata["option"]`; `metadata["help"]` its help) and one key of the flow's `parameters`;
- `recipe(settings, parameters) -> StageRecipe`, a recipe that holds its items (`HeldItems`);
- `summarize(outcome, parameters) -> dict`, what the command prints and the flow returns.

Where it is found: a kind whose declaration says `command = "ask"` is `tasks/<kind>/tasks.py`; a stage of your own
package is its dotted module name (`peras ask mypkg.letters`), which also declares the stage (`declare`) when
imported; the setting `stage_modules` (PERAS_STAGE_MODULES, comma-separated) names such modules once, so that
`peras ask KIND` and `peras runs` know their kinds in every process. A module that cannot be used (it raises when
imported, declares a kind or table of PERAS's own, or a kind another module declares) is refused in one line naming
it (tasks/engine/own_stages.py); named by the setting, it is skipped by every other command.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

from peras.errors import UsageError
from peras.settings import Settings
from tasks.engine.own_stages import configured_stage_modules, import_stage_module, skipped_modules
from tasks.engine.stage import declarations

NEEDED = ("Parameters", "recipe", "summarize")


def asked_stage_modules(settings: Settings) -> dict[str, str]:
    """Every stage `peras ask` runs, by kind: the project's (`command = "ask"`) and those `stage_modules` names."""
    found = {stage.kind: f"tasks.{stage.kind}.tasks" for stage in declarations() if stage.command == "ask"}
    return found | configured_stage_modules(settings.stage_modules)


def asked_stage(settings: Settings, name: str) -> ModuleType:
    """The stage module called `name`: a kind `peras ask` knows, or a module's dotted name (it declares its stage).
    A kind a skipped module of the setting also declares is refused with that module's reason."""
    known = asked_stage_modules(settings)
    skipped = skipped_modules()
    clash = next((s.reason for s in skipped.values() if s.kind == name), None)
    if clash is not None:
        raise UsageError(clash)
    module_name = known.get(name) or (name if "." in name else None)
    if module_name is None:
        choices = ", ".join(sorted(known)) or "none"
        unused = f"; skipped: {', '.join(map(repr, skipped))} (`peras ask MODULE` says why)" if skipped else ""
        raise UsageError(
            f"no stage {name!r} to ask: give a kind ({choices}) or the dotted name of a stage module of your own "
            f"(docs/architecture.md, 'Adding an LLM stage'){unused}"
        )
    module = import_stage_module(module_name)
    missing = [attr for attr in NEEDED if not hasattr(module, attr)]
    if missing or not dataclasses.is_dataclass(getattr(module, "Parameters", None)):
        raise UsageError(
            f"stage module {module_name!r} cannot be asked: it needs a dataclass Parameters, recipe() and summarize() "
            f"(missing: {', '.join(missing) or 'Parameters is not a dataclass'})"
        )
    return module


def asked_parameters(module: ModuleType, given: dict[str, Any]) -> Any:
    """The stage's Parameters from the flow's `parameters` (lists as given); an unknown or missing one is refused."""
    fields = {field.name for field in dataclasses.fields(module.Parameters)}
    unknown = sorted(set(given) - fields)
    if unknown:
        raise UsageError(f"stage {module.__name__} takes no parameter {', '.join(unknown)} (it takes {sorted(fields)})")
    try:
        return module.Parameters(**given)
    except TypeError as exc:
        raise UsageError(f"stage {module.__name__}: {exc}") from exc
