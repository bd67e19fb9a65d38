"""agent/signals.py: the cross-thread abort signal (pi's AbortSignal)."""

import threading

from sessions_app.agent.signals import AbortSignal


def test_the_first_trigger_wins_and_wakes_waiters_in_other_threads():
    signal = AbortSignal()
    assert not signal.is_set() and not signal.wait(0.01)
    woke = []
    waiter = threading.Thread(target=lambda: woke.append(signal.wait(10)))
    waiter.start()
    signal.trigger("stopped by the user")
    signal.trigger("timeout")  # too late: the reason stays the first one
    waiter.join(5)
    assert woke == [True] and signal.is_set() and signal.reason == "stopped by the user"


def test_callbacks_run_once_even_when_one_fails_and_can_be_removed():
    signal = AbortSignal()
    calls = []

    def failing():
        calls.append("failing")
        raise RuntimeError("a canceller that breaks")

    signal.add_callback(failing)
    signal.add_callback(lambda: calls.append("second"))
    removed = signal.add_callback(lambda: calls.append("removed"))
    removed()
    removed()  # removing twice is harmless
    signal.trigger()
    signal.trigger()
    assert calls == ["failing", "second"] and signal.reason == "aborted"


def test_a_callback_added_after_the_abort_runs_at_once():
    signal = AbortSignal()
    signal.trigger("done")
    calls = []
    remove = signal.add_callback(lambda: calls.append("late"))
    assert calls == ["late"]
    remove()  # nothing was kept, nothing to remove
