"""Log-probability readers: the options' distribution at one answer token (LogP's softmax over the options'
log-probabilities), for the four labels (the judge's `logprob` method) and a pairwise answer's two options
(tasks/pairwise/parsing.py), and which generated token spells the label."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Generic, NamedTuple, TypeVar


class LogprobScores(NamedTuple):
    """Label probabilities from the label token's top log-probabilities; all None when unusable."""

    p_chosen: float | None
    expected_score: float | None
    dist: dict[int, float] | None
    reason: str
    missing: tuple[int, ...] = ()  # labels none of whose tokens is among the top log-probabilities
    mass: float | None = None  # sum of exp(logprob) over the label tokens found, before renormalising


def label_logprob_scores(top_logprobs: list[dict[str, Any]] | None) -> LogprobScores:
    """Label distribution from one token's top log-probabilities, renormalised over the tokens "0".."3".

    Renormalising exp(logprob) over the labels is the softmax over the options' log-probabilities
    (`option_distribution`). Tokens equal to a label after stripping spaces (" 2" and "2") add up. `p_chosen` is the
    largest label probability (LogP's confidence; ties: the lower label), `expected_score` is sum_k k * p(k);
    `missing` lists the labels without a top token (their probability is 0 here) and `mass` the probability the
    label tokens covered. If no top token is a label, the values are None and `reason` is 'no label token' (or 'no
    logprobs' for an empty list).
    """
    found = option_distribution(top_logprobs, _LABEL_TOKENS)
    if found.dist is None:
        reason = "no label token" if found.reason == "no option token" else found.reason
        return LogprobScores(None, None, None, reason)
    dist = found.dist
    best = max(range(4), key=lambda k: (dist[k], -k))
    return LogprobScores(dist[best], sum(k * p for k, p in dist.items()), dist, "ok", found.missing, found.mass)


K = TypeVar("K")


class OptionDistribution(NamedTuple, Generic[K]):
    """The options' probabilities at one answer token, renormalised over the options; dist None when unusable."""

    dist: dict[K, float] | None
    reason: str  # 'ok', 'no logprobs', 'no option token'
    missing: tuple[K, ...] = ()  # options none of whose tokens is among the top log-probabilities
    mass: float | None = None  # sum of exp(logprob) over the option tokens found, before renormalising


def option_distribution(top_logprobs: list[dict[str, Any]] | None, options: Mapping[str, K]) -> OptionDistribution[K]:
    """The softmax over the options' log-probabilities at one token: exp(logprob) of every top token that spells an
    option (`options`: token text, spaces stripped -> option; several tokens of one option add up), divided by their
    sum. LogP's distribution, for the four labels (`label_logprob_scores`) and for a pairwise answer's two options
    (tasks/pairwise/parsing.py). An option without a top token has probability 0 and is listed in `missing`."""
    if not top_logprobs:
        return OptionDistribution(None, "no logprobs")
    order = list(dict.fromkeys(options.values()))
    mass: dict[K, float] = dict.fromkeys(order, 0.0)
    present: set[K] = set()
    for entry in top_logprobs:
        option = options.get(str(entry.get("token", "")).strip())
        logprob = entry.get("logprob")
        if option is None or logprob is None or math.isnan(logprob):
            continue
        present.add(option)
        mass[option] += math.exp(logprob)
    total = sum(mass.values())
    if not present or total <= 0.0:
        return OptionDistribution(None, "no option token")
    missing = tuple(k for k in order if k not in present)
    return OptionDistribution({k: p / total for k, p in mass.items()}, "ok", missing, total)


def label_token_top_logprobs(content: list[dict[str, Any]] | None, label: int) -> list[dict[str, Any]] | None:
    """The top log-probabilities of the last generated token that spells `label`, or None if none does."""
    return label_token(content, label)[1]


def label_token(content: list[dict[str, Any]] | None, label: int) -> tuple[int | None, list[dict[str, Any]] | None]:
    """(index, top log-probabilities) of the last generated token that spells `label` - with CoT the final score
    after the reasoning - or (None, None) if none does."""
    tokens = content or []
    for index in range(len(tokens) - 1, -1, -1):
        if str(tokens[index].get("token", "")).strip() == str(label):
            return index, tokens[index].get("top_logprobs") or None
    return None, None


_LABEL_TOKENS = {str(k): k for k in range(4)}
