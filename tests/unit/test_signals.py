"""`runjobs`'s signal handling: a SIGTERM that lands at any moment wakes the main thread.

The main thread blocks in os.read on a pipe until a signal handler writes to it. Python runs a
signal's handler between bytecodes, so a signal that lands after the last such point but
before read() blocks would leave the read blocked with the handler not yet run (the process
then never drained: seen once in CI). The interpreter's own C-level handler therefore writes
to the same pipe (`signal.set_wakeup_fd`), whenever the signal lands.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from anole_jobs.worker.process import Signals


@pytest.fixture
def restore_signals():
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    previous_fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(previous_fd)
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)
    signal.set_wakeup_fd(previous_fd)


def test_the_c_level_handler_writes_to_the_wait_pipe(restore_signals) -> None:
    signals = Signals()
    signals.install()
    assert signal.set_wakeup_fd(-1) == signals._wake_write
    signal.set_wakeup_fd(signals._wake_write)


def test_sigterm_to_the_process_ends_the_wait(restore_signals) -> None:
    # Sent from another thread while the main thread waits (or is about to).
    signals = Signals()
    signals.install()
    threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    signals.wait()
    assert signals.received
    assert signals.first == "SIGTERM"
