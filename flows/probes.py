"""probes flow: perturbed copies of a collection's judged pairs, published as a collection of their own."""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.probes.tasks import (
    choose_kinds,
    make_probe_copies,
    probe_collection_name,
    probe_fingerprint,
    publish_probe_set,
    published_probe_fingerprint,
    read_source_pairs,
    summarize_build,
)
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="probes-build", flow_run_name="probes-build-{collection}", log_prints=True)
def probes_build(
    collection: str,
    sample: int = 20,
    seed: int = 0,
    kinds: list[str] | None = None,
    name: str | None = None,
    subset: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Draw `sample` judged pairs of `collection` (or of its topic `subset`) with `seed` and publish their clean and
    perturbed copies (each kind's variants) as the collection `name` (default `<collection>-probes`); the same call
    again changes nothing."""
    settings = settings or load_settings()
    target = name or probe_collection_name(collection)
    chosen = choose_kinds(kinds)
    pairs, source_fingerprint = read_source_pairs(settings, collection, subset, target)
    copies = make_probe_copies(pairs, chosen, sample, seed, collection, subset)
    fingerprint = probe_fingerprint(source_fingerprint, subset, chosen, sample, seed)
    if published_probe_fingerprint(settings, target) == fingerprint:
        return summarize_build(target, collection, copies, "unchanged")
    build = {"n_pairs": sample, "seed": seed, "subset": subset, "kinds": [k.kind for k in chosen]}
    build["fingerprint"] = fingerprint
    publish_probe_set(settings, collection, target, pairs, copies, build)
    publish_analyst_snapshot(settings)
    return summarize_build(target, collection, copies, "published")
