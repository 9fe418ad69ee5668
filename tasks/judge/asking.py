"""How the judge stage asks: a work item (pair, personality, CoT setting, confidence method) becomes requests.

For each item the label request goes first; then the confidence comes from the method:
- verbalized: a second request (same personality) states the label and asks for 0-100;
- logprob (the overconfidence study's LogP): softmax over the four labels' log-probabilities at the answer token
  (the last generated token that spells the parsed label; with CoT, the final score after the reasoning);
  confidence = the largest label probability x 100; the four-way distribution, p(parsed label), the labels
  missing from the top log-probabilities and the probability mass the labels covered are kept;
- sampling (the study's MP): n label requests at temperature 0.7 (seeds 0..n-1); majority label, confidence =
  share of votes x 100, expected score = mean vote. Ties: the votes carry no confidence to break them with (the
  study breaks voting ties by the highest confidence where one exists), so the lower label wins;
- self (self-confidence, SC): one request (temperature 0) answering the label and a 0-100 confidence as JSON;
- certainty (in-prompt certainty): one request (temperature 0.7, top_p 0.95 by default) answering the label as
  [[k]] and a 1-100 certainty as [[X]]; a judgment is high-certainty at `certainty_threshold` (80).
An unreadable answer never becomes a label: after the engine's regenerations it is recorded as a failure with
its reason. Everything about sending, caching and journaling is the engine's (tasks/engine/engine.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from peras.errors import RequestRejected
from peras.llm.constraints import FREE, AnswerShape, answer_shape
from peras.llm.joint_parsing import parse_self_answer
from peras.llm.logprobs import label_logprob_scores, label_token
from peras.llm.parsing import parse_confidence, parse_label
from peras.prompting import sampling_params
from tasks.engine.spec import Ask, AskFn, PersonaStage, request_params, sent_params
from tasks.engine.stages import ask_samples, majority
from tasks.judge.parsing import parse_certainty_answer
from tasks.judge.prompt import build_confidence_messages, build_joint_messages, build_label_messages, label_prompt

METHODS = ("verbalized", "logprob", "sampling", "self", "certainty")
JOINT_METHODS = {"self": parse_self_answer, "certainty": parse_certainty_answer}  # label and confidence in one answer
Fetch = Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]


@dataclass(frozen=True, slots=True)
class Pair:
    """A judged pair's texts and the hash of both (a judgment is tied to the texts it was made on)."""

    query: str
    passage: str
    text_sha: str


Pairs = dict[tuple[str, str], Pair]


# Not frozen: one is built per judgment, and a frozen dataclass costs ~1 us more to build (issue 35); never changed.
@dataclass(slots=True)
class WorkItem:
    """One judgment to make."""

    query_id: str
    doc_id: str
    personality: str
    cot: bool
    method: str


@dataclass(frozen=True)
class JudgeConfig:
    """Everything about how to ask, fixed for a run (recorded in judge_runs.params)."""

    model: str
    backend: str
    max_tokens_label: int | None = None
    max_tokens_cot: int | None = None
    max_tokens_confidence: int | None = None
    n_samples: int = 10
    max_tokens_joint: int | None = None  # 'self' and 'certainty' answers (label, confidence, and any reasoning)
    sampling_temperature: float = 0.7
    top_logprobs: int = 20  # enough that all four labels are normally among them (OpenAI's maximum)
    certainty_temperature: float = 0.7
    certainty_top_p: float = 0.95
    certainty_threshold: float = 80.0  # a 'certainty' judgment at or above this is high-certainty
    extra_body: dict[str, Any] = field(default_factory=dict)
    answer_format: str = FREE  # the endpoint's answer format: the engine writes each Ask's shape in it when sending

    def label_params(self, cot: bool, method: str) -> dict[str, Any]:
        """Request parameters of the label request (temperature 0, top_p 1 from the prompt file; 'certainty'
        samples at certainty_temperature and certainty_top_p)."""
        params = sampling_params(label_prompt(cot, method))
        if method == "certainty":
            params |= {"temperature": self.certainty_temperature, "top_p": self.certainty_top_p, "seed": 0}
        limit = self.max_tokens_cot if cot else self.max_tokens_label
        if method in JOINT_METHODS:
            limit = self.max_tokens_joint
        by_method: dict[str, dict[str, Any]] = {
            "logprob": {"logprobs": True, "top_logprobs": self.top_logprobs},
            "sampling": {"temperature": self.sampling_temperature},
        }
        return request_params(params, max_tokens=limit, extra_body=self.extra_body, **by_method.get(method, {}))

    def confidence_params(self) -> dict[str, Any]:
        """Request parameters of the post-hoc confidence request."""
        return request_params(
            sampling_params("confidence"), max_tokens=self.max_tokens_confidence, extra_body=self.extra_body
        )

    def label_sent(self, cot: bool, method: str) -> dict[str, Any]:
        """The label request's parameters as the engine sends them (its shape's constraint in the run's answer
        format): what the run records and its gate compares every stored request with."""
        return sent_params(self.label_params(cot, method), label_answer_shape(cot, method), self.answer_format)

    def confidence_sent(self) -> dict[str, Any]:
        """The confidence request's parameters as the engine sends them (as label_sent)."""
        return sent_params(self.confidence_params(), answer_shape("confidence"), self.answer_format)


@dataclass
class JudgePlan:
    """The items of a run not yet judged on the current texts, in prefix-sharing order, streamed per group.

    Groups are (personality, CoT setting, method): prompts of a group share their system and rubric prefix.
    With `with_failures`, items whose stored judgment is a failure are planned again (retry_failed).
    """

    run_id: str
    pairs: Pairs
    personalities: list[str]
    cot_settings: list[bool]
    methods: list[str]
    failures_pending: bool = False

    def with_failures(self) -> JudgePlan:
        """The same plan, with the items whose stored judgment failed (unreadable, refused) to do again."""
        return replace(self, failures_pending=True)

    def groups(self) -> Iterator[tuple[str, bool, str]]:
        """Personality, then setting, then method."""
        for personality in self.personalities:
            for cot in self.cot_settings:
                for method in self.methods:
                    yield personality, cot, method

    def done(self, fetch: Fetch, personality: str, cot: bool, method: str) -> set[tuple[str, str]]:
        """Pairs of the group with a stored judgment made on the texts as they are now (and that did not fail,
        when failures are to be done again)."""
        params = {"run_id": self.run_id, "personality": personality, "cot": cot, "confidence_method": method}
        rows = fetch("judge/select_done_pairs", params)
        return {
            (query_id, doc_id)
            for query_id, doc_id, text_sha, status in rows
            if (pair := self.pairs.get((query_id, doc_id))) is not None
            and text_sha in (None, pair.text_sha)
            and not (self.failures_pending and status != "ok")
        }

    def count(self, fetch: Fetch) -> int:
        """Items still to judge."""
        return sum(len(self.pairs) - len(self.done(fetch, *group)) for group in self.groups())

    def items(self, fetch: Fetch) -> Iterator[WorkItem]:
        """The items still to judge, one group's done set in memory at a time."""
        for personality, cot, method in self.groups():
            done = self.done(fetch, personality, cot, method)
            for query_id, doc_id in self.pairs:
                if (query_id, doc_id) not in done:
                    yield WorkItem(query_id, doc_id, personality, cot, method)


@dataclass
class JudgeStage(PersonaStage[JudgeConfig]):
    """Turns work items into label and confidence requests, and their answers into judgment rows."""

    pairs: Pairs
    kind: str = "judge"
    # The label requests' parameters by (CoT, method): the same for every item of a run, so built once (shared by
    # the items' Asks, which never change them).
    _label_params: dict[tuple[bool, str], dict[str, Any]] = field(default_factory=dict, init=False, repr=False)

    def label_params(self, cot: bool, method: str) -> dict[str, Any]:
        """`JudgeConfig.label_params`, remembered."""
        params = self._label_params.get((cot, method))
        if params is None:
            params = self._label_params[(cot, method)] = self.config.label_params(cot, method)
        return params

    async def handle(self, item: WorkItem, ask: AskFn) -> dict[str, Any]:
        """One judgment row: label, confidence by the item's method, or the failure and why."""
        pair = self.pairs[(item.query_id, item.doc_id)]
        row: dict[str, Any] = {
            "query_id": item.query_id,
            "doc_id": item.doc_id,
            "personality": item.personality,
            "cot": item.cot,
            "confidence_method": item.method,
            "text_sha": pair.text_sha,
        }
        try:
            if item.method == "sampling":
                return row | await self._by_sampling(item, pair, ask)
            if item.method in JOINT_METHODS:
                row.update(await self._in_one_answer(item, pair, ask))  # in place: one request per item, per item
                return row
            return row | await self._by_label_then_confidence(item, pair, row, ask)
        except RequestRejected as exc:
            refused = {"status": "error", "reason": str(exc)[:500]}
            key = "confidence_request_id" if "label_request_id" in row else "label_request_id"
            return row | refused | {key: exc.request_id}

    async def _by_label_then_confidence(
        self, item: WorkItem, pair: Pair, row: dict[str, Any], ask: AskFn
    ) -> dict[str, Any]:
        personality = self.personalities[item.personality]
        messages = build_label_messages(personality, pair.query, pair.passage, item.cot)
        params = self.label_params(item.cot, item.method)
        shape = label_answer_shape(item.cot, item.method)
        label = await ask(Ask(messages, params, "label", self._label_parser(item), shape=shape))
        row["label_request_id"] = label.request_id
        if not label.ok:
            return {"label_request_id": label.request_id, "status": "label_parse_failure", "reason": label.reason}
        value = int(label.parsed.value)
        found: dict[str, Any] = {"label_request_id": label.request_id, "label": value}
        if item.method == "logprob":
            return found | self._by_logprobs(label.logprobs, value)
        confidence_messages = build_confidence_messages(personality, pair.query, pair.passage, value)
        confidence = await ask(
            Ask(
                confidence_messages,
                self.config.confidence_params(),
                "confidence",
                parse_confidence,
                shape=answer_shape("confidence"),
            )
        )
        found["confidence_request_id"] = confidence.request_id
        if not confidence.ok:
            return found | {"status": "confidence_parse_failure", "reason": confidence.reason}
        return found | {"status": "ok", "confidence": float(confidence.parsed.value)}

    @staticmethod
    def _by_logprobs(logprobs: list[dict[str, Any]] | None, value: int) -> dict[str, Any]:
        """LogP: the label distribution at the answer token; confidence = its largest probability x 100."""
        index, top = label_token(logprobs, value)
        scores = label_logprob_scores(top)
        if scores.dist is None or scores.p_chosen is None:
            return {"status": "confidence_parse_failure", "reason": f"logprob: {scores.reason}"}
        return {
            "status": "ok",
            "confidence": 100.0 * scores.p_chosen,
            "expected_score": scores.expected_score,
            "label_dist": [scores.dist[k] for k in range(4)],
            "p_label": scores.dist[value],
            "missing_labels": list(scores.missing),
            "label_mass": scores.mass,
            "label_token_index": index,
        }

    async def _in_one_answer(self, item: WorkItem, pair: Pair, ask: AskFn) -> dict[str, Any]:
        """'self' and 'certainty': the label and the confidence read from one answer (one request)."""
        messages = build_joint_messages(
            self.personalities[item.personality], pair.query, pair.passage, item.cot, item.method
        )
        params = self.label_params(item.cot, item.method)
        shape = label_answer_shape(item.cot, item.method)
        answer = await ask(Ask(messages, params, "label", JOINT_METHODS[item.method], shape=shape))
        if not answer.ok:
            return {
                "label_request_id": answer.request_id,
                "confidence_request_id": answer.request_id,
                "status": "label_parse_failure",
                "reason": answer.reason,
            }
        return {
            "label_request_id": answer.request_id,
            "confidence_request_id": answer.request_id,
            "status": "ok",
            "label": int(answer.parsed.value),
            "confidence": float(answer.parsed.confidence),
        }

    async def _by_sampling(self, item: WorkItem, pair: Pair, ask: AskFn) -> dict[str, Any]:
        """MP: n label samples (tasks/engine/stages.py ask_samples); the majority label, ties to the lower one."""
        messages = build_label_messages(self.personalities[item.personality], pair.query, pair.passage, item.cot)
        params = self.label_params(item.cot, item.method)
        spec = Ask(messages, params, "label", self._label_parser(item), shape=label_answer_shape(item.cot, item.method))
        answers = await ask_samples(ask, spec, self.config.n_samples)
        votes = [int(a.parsed.value) for a in answers if a.ok]
        row: dict[str, Any] = {
            "label_request_id": answers[0].request_id,
            "sample_request_ids": [a.request_id for a in answers],
        }
        voted = majority(votes, len(answers), tie_break=lambda k: -k)
        if voted is None:
            return row | {"status": "label_parse_failure", "reason": f"no parseable sample of {len(answers)}"}
        label, confidence = voted
        return row | {
            "status": "ok",
            "label": label,
            "confidence": confidence,
            "expected_score": sum(votes) / len(votes),
        }

    @staticmethod
    def _label_parser(item: WorkItem) -> Callable[[str], Any]:
        return lambda text: parse_label(text, item.cot)


@functools.cache  # once per (CoT, method): asked for every request
def label_answer_shape(cot: bool, method: str) -> AnswerShape:
    """The shape of a label request's answer: the joint methods' own prompts, else the label's."""
    return answer_shape(label_prompt(cot, method))
