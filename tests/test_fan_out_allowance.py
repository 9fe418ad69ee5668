"""How long a fanned-out run's part may stay silent: it follows what the run's beats look like (issue 36 item 7)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tasks.judge.fan_out import Allowance, Beats, is_lost, lost_allowance

pytestmark = pytest.mark.core

T0 = datetime(2026, 11, 27, 6, 0, 0)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_beats_on_time_keep_the_allowance_asked_for():
    beats = {"a": Beats(at(2), at(30), 5.0), "b": Beats(at(3), at(31), 4.0)}
    assert lost_allowance(beats, {"a": at(0), "b": at(0)}, 15.0) == Allowance(15.0, 15.0)


def test_late_beats_and_slow_starts_of_a_loaded_machine_widen_it():
    # beats 20 s apart (5 s asked for) and a flow run that took 12 s to begin: 3x each
    beats = {"a": Beats(at(12), at(80), 20.0), "b": Beats(at(4), at(70), 9.0)}
    assert lost_allowance(beats, {"a": at(0), "b": at(0)}, 15.0) == Allowance(60.0, 36.0)


def test_before_any_part_has_beaten_a_silent_part_gets_four_times_the_allowance():
    assert lost_allowance({}, {"a": at(0)}, 15.0) == Allowance(15.0, 60.0)


def test_a_flow_run_started_by_another_parent_tells_nothing_of_starts():
    # beats of a flow run this parent did not start (an earlier call's) count for gaps, not for starts
    assert lost_allowance({"old": Beats(at(100), at(200), 8.0)}, {"a": at(0)}, 15.0) == Allowance(24.0, 60.0)


def test_lost_counts_from_the_last_beat_or_else_from_the_state_it_is_in():
    from peras.warehouse import now

    state_since = now() - timedelta(seconds=30)
    assert is_lost(None, state_since, 20.0) and not is_lost(None, state_since, 40.0)
    assert not is_lost(now() - timedelta(seconds=5), state_since, 20.0)
