"""The ir_metadata of what `peras export-qrels` and `peras build-runs` write (tasks/shared/ir_metadata.py's format).

A qrels file of LLM labels names its judge run: the model and its digest where one is known, the prompt files'
sha256, the label requests' decoding parameters (sampling, token caps, the answer constraint sent), the seeds, the
run's answer format and probe, whose labels (a personality or an aggregate) under which CoT setting and confidence
method. Everything but the prompt files' hashes, PERAS's version and the commit is read from the warehouse, so the
block is the same each time the same labels are exported.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from peras.local_model.weights import DEFAULT_MODEL
from peras.paths import PROMPTS_DIR
from peras.sql import run_sql
from tasks.shared import ir_metadata

EMBEDDED_BACKEND = "llama.cpp"
NOT_REPORTED = "not reported (the server names the model only)"


def prompt_names(source: str, cot: bool, method: str) -> list[str]:
    """The prompt files (<name>.toml in PROMPT_FOLDERS) a judgment of this CoT setting and method was asked with."""
    if source != "llm":
        return []  # imported judgments: asked elsewhere
    setting = "cot" if cot else "nocot"
    if method in ("self", "certainty"):
        return [f"{method}_{setting}"]
    return [f"label_{setting}"] + (["confidence"] if method == "verbalized" else [])


# Where a judge run's prompt files live: the shared label and confidence prompts, and the judge's own (self, certainty).
# Named by path, not imported: a stage imports no other stage (docs/architecture.md).
PROMPT_FOLDERS = (PROMPTS_DIR, Path(__file__).resolve().parents[1] / "judge" / "prompts")


def prompt_hashes(names: Iterable[str]) -> dict[str, str]:
    """{file name: sha256 of the file} of the prompt files named."""
    files = [next(path for folder in PROMPT_FOLDERS if (path := folder / f"{name}.toml").is_file()) for name in names]
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def model_digest(model: str, backend: str, params: dict[str, Any]) -> str:
    """The model's digest or revision where known: one the run's parameters record, the embedded model's pinned
    sha256 (peras/local_model/weights.py), else that the server reports none (OpenAI-compatible servers name the
    model only)."""
    for key in ("model_digest", "model_revision", "system_fingerprint"):
        if params.get(key):
            return str(params[key])
    if backend == EMBEDDED_BACKEND and model == DEFAULT_MODEL.name:
        served = DEFAULT_MODEL.upcast or DEFAULT_MODEL
        return f"sha256:{served.sha256} (the embedded model's pinned file)"
    return NOT_REPORTED


def seeds(values: Iterable[Any]) -> list[int]:
    """Every `seed` in the parameters given (nested dicts and lists searched), sorted, once each."""
    found: set[int] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.update(int(v) for k, v in value.items() if k == "seed" and isinstance(v, int))
            stack.extend(v for k, v in value.items() if k != "seed")
        elif isinstance(value, list):
            stack.extend(value)
    return sorted(found)


def judge_method(
    con: Any, run_id: str, cot: bool, method: str, whose: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The method and data components of one label group of a judge run, read from the warehouse."""
    params = {"run_id": run_id, "cot": cot, "confidence_method": method}
    row = run_sql(con, "evaluate/select_run_provenance", params).fetchone()
    name, collection_id, subset_name, source, model, backend, run_text, label_texts = row
    run_params = json.loads(run_text)
    label_params = [json.loads(text) for text in label_texts or []]
    judge = {
        "run": name,
        "source": source,
        "model": model,
        "backend": backend,
        "digest": model_digest(model, backend, run_params),
        **whose,
        "cot": cot,
        "confidence method": method,
        "prompt files": prompt_hashes(prompt_names(source, cot, method)),
        "label request parameters": label_params,
        "answer constraint": {k: run_params.get(k) for k in ("answer_format", "answer_probe")},
        "seeds": seeds([run_params, *label_params]),
        "run parameters": run_params,
    }
    return {"automatic": True, "judge": judge}, {"test collection": {"name": collection_id, "subset": subset_name}}


def qrels_header(con: Any, run_id: str, cot: bool, method: str, choice: dict[str, Any]) -> str:
    """The ir_metadata block of a qrels file of a judge run's labels (`choice`: run name, personality or aggregate,
    fill_from_human, and hybrid: the assessment plan whose human labels replace the run's where given)."""
    whose = {"aggregate": choice["aggregate"]} if choice["aggregate"] else {"personality": choice["personality"]}
    method_component, data = judge_method(con, run_id, cot, method, whose)
    filled, plan = bool(choice["fill_from_human"]), choice.get("hybrid")
    data["qrels"] = "human qrels, LLM labels where they judge nothing" if filled else "LLM labels alone"
    if plan:
        data["qrels"] = f"assessors' labels of plan {plan} where given, else LLM labels (per line: *.provenance.tsv)"
    flags = [
        f"--hybrid {plan}" if plan else f"--run {choice['run']}",
        f"--aggregate {whose['aggregate']}" if "aggregate" in whose else f"--personality {whose['personality']}",
        "--cot" if cot else "--no-cot",
        f"--confidence-method {method}",
        *(["--fill-from-human"] if filled else []),
    ]
    return ir_metadata.header_text(
        f"{choice['run']}-{next(iter(whose.values()))}",
        {
            "platform": ir_metadata.platform(["duckdb", "polars"]),
            "implementation": ir_metadata.implementation(f"peras export-qrels {' '.join(flags)} --output FILE"),
            "method": method_component,
            "data": data,
        },
    )


def run_header(system: str, retrieval: dict[str, Any], collection_id: str, depth: int) -> str:
    """The ir_metadata block of a run `peras build-runs` wrote (one bm25s configuration over the judged pool)."""
    return ir_metadata.header_text(
        system,
        {
            "platform": ir_metadata.platform(["bm25s", "PyStemmer"]),
            "implementation": ir_metadata.implementation(
                f"peras build-runs --collection {collection_id} --depth {depth} --output-dir DIR"
            ),
            "method": {"automatic": True, "score ties": "doc_id ascending", "retrieval": [retrieval]},
            "data": {"test collection": {"name": collection_id, "corpus": "the passages the qrels judge"}},
        },
    )
