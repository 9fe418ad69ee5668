"""Progress bars: on an 80-column terminal the counts stay whole, the description gives way."""

from __future__ import annotations

import io
import re

import pytest
import rich.progress
from rich.console import Console

import peras.progress as progress

pytestmark = pytest.mark.core


def test_judge_bar_keeps_its_total_on_an_80_column_terminal(monkeypatch):
    consoles: list[Console] = []

    class NarrowProgress(rich.progress.Progress):
        def __init__(self, *columns, **options):
            consoles.append(Console(file=io.StringIO(), width=80, force_terminal=True))
            super().__init__(*columns, console=consoles[-1], **options)

    monkeypatch.setattr(rich.progress, "Progress", NarrowProgress)
    monkeypatch.setattr(progress, "_enabled", True)
    with progress.track("judge dl19-balanced-meta-llama_Llama-3.1-8B-Instruct-and-more", 101860) as bar:
        bar.advance(5000)
        bar._progress.refresh()  # type: ignore[union-attr]
    frames = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", consoles[0].file.getvalue()).split("\r")
    drawn = next(frame for frame in frames if "5000/" in frame)
    assert "5000/101860" in drawn
    assert drawn.startswith("judge dl19-balanced-meta-llama_…")
    assert len(drawn.rstrip()) <= 80


class Answered:
    """What the client returns, as far as the counts read it: 100 prompt tokens evaluated, 5 generated."""

    prompt_tokens, cached_tokens, completion_tokens = 120, 20, 5


def test_the_estimate_is_said_once_after_5_percent_of_the_items_and_10_answers(monkeypatch, capsys):
    monkeypatch.setattr(progress, "_watched", True)
    counts = progress.Counts("judge r", 100)
    counts.started -= 10.0  # 5 items in 10 s: the 95 left take minutes, worth saying
    for _ in range(10):
        counts.request_sent()
        counts.request_answered(Answered())
    for _ in range(4):
        counts.item_done()
    assert capsys.readouterr().err == ""  # 4% of the items: not yet
    counts.item_done()
    said = capsys.readouterr().err
    assert re.fullmatch(
        r"judge r: at the speed measured so far \([\d,]+ tokens/s, [\d,.]+ items/min over 5 items\), "
        r"the 95 items left take about \d+ (s|min)\n",
        said,
    ), said
    assert counts.tokens == 10 * 105
    counts.item_done()
    assert capsys.readouterr().err == ""  # once
    assert counts.requests_text() == "requests 10 asked, 10 answered, 0 failed"


def test_no_estimate_when_what_is_left_takes_seconds(monkeypatch, capsys):
    monkeypatch.setattr(progress, "_watched", True)
    counts = progress.Counts("judge r", 40)
    for _ in range(10):
        counts.request_sent()
        counts.request_answered(Answered())
    for _ in range(5):
        counts.item_done()  # instant items: the 35 left take well under a minute
    assert capsys.readouterr().err == ""


def test_after_a_no_the_estimate_is_considered_again_a_sixteenth_more_items_or_a_second_later(monkeypatch, capsys):
    # Per item, a fast run would work out the rate at every item; it does ~16 times per doubling, and once a second.
    monkeypatch.setattr(progress, "_watched", True)
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    counts = progress.Counts("judge r", 10_000)
    considered = []
    due = counts.due_for_estimate
    monkeypatch.setattr(counts, "due_for_estimate", lambda: considered.append(counts.items) or due())
    for _ in range(10):
        counts.request_answered(Answered())
    for _ in range(1000):
        clock[0] += 0.0001  # 10,000 items a second: the 9,000 left take a second, not worth a line
        counts.item_done()
    assert considered[:6] == [1, 2, 3, 4, 5, 6]
    assert considered[-2:] == [911, 967] and len(considered) == 92  # not 1,000
    clock[0] += 0.5
    for _ in range(30):
        counts.item_done()
    assert considered[-1] == 1027  # a sixteenth more items
    assert capsys.readouterr().err == ""
    clock[0] += 600.0  # then the server slows down: the rest takes minutes, said at the next item (a second passed)
    counts.item_done()
    assert considered[-1] == 1031
    assert "the 8,969 items left take about" in capsys.readouterr().err


def test_before_any_item_is_done_the_eta_is_a_lower_bound_from_the_answered_requests(monkeypatch):
    from peras import progress

    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    counts = progress.Counts("judge r", 880)
    assert counts.eta() == "?"
    for _ in range(110):
        counts.request_sent()
        counts.request_answered()
    clock[0] += 660.0  # 110 answers in 11 minutes, no judgment done yet (each needs two)
    assert counts.eta() == ">= 1 h 17 min"  # 770 items left, at least a request each, at 10 a minute
    counts.item_done()
    assert counts.eta() == "161 h 09 min"  # then items: 879 left at one per 11 minutes


def test_the_tick_thread_sees_the_commands_prefect_settings():
    # The command points Prefect at its server in its own context (cli/prefect_server.prefect_api); a plain thread
    # sees Prefect's import-time settings instead (no API URL): its client would start a temporary server of its own
    # that outlives the command, and the progress artifact would go there (issue 48 item 7).
    import threading

    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    seen: list[str | None] = []
    ticked = threading.Event()

    def on_tick(counts: progress.Counts) -> None:
        seen.append(get_current_settings().api.url)
        ticked.set()

    url = "http://127.0.0.1:9/api"
    with temporary_settings(updates={PREFECT_API_URL: url}), progress.asking("judge r", 1, 0.01, on_tick=on_tick):
        assert ticked.wait(30)
    assert set(seen) == {url}
