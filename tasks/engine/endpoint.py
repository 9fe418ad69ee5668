"""Where an LLM stage's requests go: the configured endpoint(s), or the embedded llama.cpp server started for it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from peras.errors import UsageError
from peras.llm.client import LLMClient
from peras.llm.constraints import FREE, Probe
from peras.settings import Settings, without_userinfo

EMBEDDED = "llama.cpp"
# The embedded server's request timeout at least: on two shared cores one long request (a recognize answer, a
# 1,000-token prompt and 384 tokens) took over 120 s alone; a timed-out greedy request is asked again to the same end.
EMBEDDED_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Endpoint:
    """Base URLs (credentials included, never recorded), the model they serve, the backend label."""

    base_urls: list[str]
    model: str
    backend: str
    answer_format: str = "free"  # the constraint dialect requests are sent in (peras/llm/constraints.py)
    answer_probe: str = "not probed"  # what the probe found, recorded with the run
    probe_requests: int = 0  # chat requests this call's probe sent: they count against the run's --request-budget
    logprobs: bool | None = None  # whether it returns log-probabilities (None: not asked; recorded with the run)

    @property
    def is_embedded(self) -> bool:
        """The llama.cpp server peras starts itself."""
        return self.backend == EMBEDDED

    @property
    def public_urls(self) -> list[str]:
        """The URLs as they may be recorded: without user name or password."""
        return [public_url(url) for url in self.base_urls]


@dataclass(frozen=True)
class Probed:
    """What a stored run records of its probes, for a call that resumes it: the answer format it asked in (None: a
    new run, or one that asked in no one format), what it has spent of its --request-budget (its probes' requests
    included) and whether its endpoint returned log-probabilities (None: never asked)."""

    answer_format: str | None = None
    spent: int = 0
    logprobs: bool | None = None


def known_format(wanted: str, resumed: str | None, embedded: bool) -> Probe | None:
    """The answer format a call asks in when no probe is needed, else None (the probe decides): `wanted` is
    --answer-format (auto, free, constrained), `resumed` the format the run it resumes asked in (None: a new run).

    --answer-format free: free; a resumed run under auto, or one that asked constrained: the format it asked in (a
    rerun sends nothing); the embedded llama.cpp server: its own dialect (the version peras builds). The one rule of
    every call: `check_endpoint` asks the probe only when this says None, and the judge's no-op check
    (tasks/judge/settled.py) answers from the warehouse only when it does not."""
    if wanted == FREE:
        return Probe(FREE, "--answer-format free")
    if resumed is not None and (wanted == "auto" or resumed != FREE):
        return Probe(resumed, "as the run resumed asked")
    if embedded:
        return Probe(EMBEDDED, "the embedded llama.cpp server")
    return None


def public_url(url: str) -> str:
    """A URL without the `user:password@` part (a key in the userinfo must never reach logs or Prefect)."""
    return without_userinfo(url)


@contextlib.contextmanager
def serving_endpoint(settings: Settings, backend: str | None) -> Iterator[Endpoint]:
    """The configured endpoint, or the embedded llama.cpp server started (and stopped) around the block."""
    if settings.mode == "batch" and not settings.base_urls:
        # Batch mode without a Batch API: the rounds are files for vLLM's run-batch (peras batch export/import).
        if not settings.model:
            raise UsageError("--mode batch without --base-url writes files for vLLM's run-batch: give --model")
        yield Endpoint([], settings.model, backend or "vllm-run-batch")
        return
    if settings.base_urls:
        if not settings.model:
            raise UsageError("--base-url needs --model (the name the server serves)")
        yield Endpoint(settings.base_urls, settings.model, backend or "openai-compatible")
        return
    from peras.local_model import local_server

    with local_server(settings) as server:
        yield Endpoint([server.base_url], server.model, EMBEDDED)


def make_client(
    settings: Settings,
    endpoint: Endpoint,
    budget_spent: int = 0,
    on_notice: Callable[[str], None] | None = None,
) -> LLMClient:
    """The client a run sends through: key variable, per-URL concurrency and machine-wide slots, retries,
    the request deadline and the run's budget (`budget_spent` of it used by the run's earlier attempts).

    The embedded server works on `local_parallel` requests at once: more in flight would wait in its queue with
    their timeouts running (and be cancelled, their work lost, when the timeout ends), so at most that many are
    sent, each with at least EMBEDDED_TIMEOUT_S."""
    concurrency, timeout_s = settings.concurrency, settings.request_timeout_s
    if endpoint.is_embedded:
        concurrency, timeout_s = min(concurrency, settings.local_parallel), max(timeout_s, EMBEDDED_TIMEOUT_S)
    return LLMClient(
        endpoint.base_urls,
        endpoint.model,
        settings.api_key_env,
        concurrency,
        timeout_s,
        settings.max_retries,
        settings.request_budget,
        slots_dir=settings.slots_dir,
        deadline_s=settings.request_deadline_s,
        on_notice=on_notice,
        budget_spent=budget_spent,
    )
