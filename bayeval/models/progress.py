"""The progress of a NUTS fit on stderr: draws done, divergences, time spent and time left.

nutpie calls a ``progress_callback`` with one ``nutpie.ChainProgress`` per chain (draws
finished out of warm-up plus draws, divergences after warm-up, whether the chain still warms
up). :func:`sampling_status` turns such a list into a :class:`Status`, and a :class:`Reporter`
writes it: on a terminal as one line rewritten in place, elsewhere (a log, a pipe) as a plain
line every :data:`LOG_INTERVAL` seconds, and on both a last line with the totals.
:func:`nutpie_progress` gives a ``nutpie.sample`` call the options that show it; a Jupyter
kernel keeps nutpie's own HTML display.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

__all__ = [
    "LOG_INTERVAL",
    "PROGRESS_RATE_MS",
    "Reporter",
    "Status",
    "format_seconds",
    "in_kernel",
    "nutpie_progress",
    "sampling_status",
]

#: Seconds between two progress lines in a log (stderr not a terminal): often enough that a
#: fit of minutes shows it is alive, rarely enough that a 30-minute fit writes about a hundred
#: lines rather than thousands.
LOG_INTERVAL = 15.0

#: Milliseconds between two of nutpie's progress callbacks: a terminal line that moves twice a
#: second reads as live, and the callback (which takes the GIL) stays negligible.
PROGRESS_RATE_MS = 500


@dataclass(frozen=True)
class Status:
    """Where a NUTS run stands, summed over its chains.

    Attributes
    ----------
    chains, tune, draws : int
        Chains, and warm-up and kept draws per chain.
    warmup_done, sampled : int
        Warm-up draws and kept draws finished, over the chains.
    divergences : int
        Divergent transitions after warm-up (nutpie counts none during warm-up, and neither
        do a fit's diagnostics).
    warming_up : int
        Chains still in warm-up (a chain not started counts as warming up).
    elapsed : float
        Seconds since sampling began.
    remaining : float or None
        Estimated seconds left: the draws left at the rate of the draws done so far; None
        before the first draw.
    """

    chains: int
    tune: int
    draws: int
    warmup_done: int
    sampled: int
    divergences: int
    warming_up: int
    elapsed: float
    remaining: float | None

    @property
    def done(self) -> int:
        """Draws finished, warm-up included, over the chains."""
        return self.warmup_done + self.sampled

    @property
    def total(self) -> int:
        """Draws the run makes, warm-up included: chains x (tune + draws)."""
        return self.chains * (self.tune + self.draws)

    def line(self) -> str:
        """One line saying where the run stands (no carriage return, no newline).

        Examples
        --------
        >>> from bayeval.models.progress import Status
        >>> Status(chains=2, tune=100, draws=400, warmup_done=200, sampled=300,
        ...        divergences=1, warming_up=0, elapsed=10.0, remaining=50.0).line()
        'sampling: 500/1000 draws (warm-up 200/200, kept 300/800), 1 divergence, 10s elapsed, about 50s left'
        """  # noqa: E501 - a doctest's output is one line
        phase = "warming up" if self.warming_up else "sampling"
        left = "" if self.remaining is None else f", about {format_seconds(self.remaining)} left"
        return (
            f"{phase}: {self.done}/{self.total} draws "
            f"(warm-up {self.warmup_done}/{self.chains * self.tune}, "
            f"kept {self.sampled}/{self.chains * self.draws}), "
            f"{self._divergences()}, {format_seconds(self.elapsed)} elapsed{left}"
        )

    def final_line(self) -> str:
        """The line of a finished run: its totals.

        Examples
        --------
        >>> from bayeval.models.progress import Status
        >>> Status(chains=2, tune=100, draws=400, warmup_done=200, sampled=800,
        ...        divergences=0, warming_up=0, elapsed=75.0, remaining=0.0).final_line()
        'sampled: 1000 draws (2 chains x (100 warm-up + 400 kept)), 0 divergences, in 1m15s'
        """
        return (
            f"sampled: {self.done} draws ({self.chains} chain{'s' * (self.chains != 1)} x "
            f"({self.tune} warm-up + {self.draws} kept)), {self._divergences()}, "
            f"in {format_seconds(self.elapsed)}"
        )

    def _divergences(self) -> str:
        said = f"{self.divergences} divergence{'s' * (self.divergences != 1)}"
        # nutpie counts a divergence only once its chain has left warm-up
        return f"{said} (counted after warm-up)" if self.warming_up else said


def sampling_status(chains: Sequence[Any], *, tune: int, draws: int, elapsed: float) -> Status:
    """The :class:`Status` of a run from nutpie's progress of each of its chains.

    Parameters
    ----------
    chains : sequence of nutpie.ChainProgress
        What nutpie's ``progress_callback`` receives; read are ``finished_draws`` (warm-up
        included), ``divergences`` (after warm-up), ``tuning`` and ``started``.
    tune, draws : int
        Warm-up and kept draws per chain, as given to ``nutpie.sample``.
    elapsed : float
        Seconds since sampling began.

    Returns
    -------
    Status

    Examples
    --------
    >>> from types import SimpleNamespace as Chain
    >>> from bayeval.models.progress import sampling_status
    >>> chains = [Chain(finished_draws=150, divergences=2, tuning=False, started=True),
    ...           Chain(finished_draws=50, divergences=0, tuning=True, started=True)]
    >>> s = sampling_status(chains, tune=100, draws=300, elapsed=20.0)
    >>> s.warmup_done, s.sampled, s.divergences, s.warming_up, s.remaining
    (150, 50, 2, 1, 60.0)
    """
    finished = [int(c.finished_draws) for c in chains]
    warmup_done = sum(min(f, tune) for f in finished)
    sampled = sum(max(f - tune, 0) for f in finished)
    done = warmup_done + sampled
    total = len(finished) * (tune + draws)
    # the draws left at the mean rate so far: warm-up draws are often slower than kept ones
    # (long trajectories before the step size settles), so the estimate errs long, early on
    remaining = None if done == 0 else elapsed * (total - done) / done
    return Status(
        chains=len(finished),
        tune=tune,
        draws=draws,
        warmup_done=warmup_done,
        sampled=sampled,
        divergences=sum(int(c.divergences) for c in chains),
        warming_up=sum(bool(c.tuning) or not bool(c.started) for c in chains),
        elapsed=elapsed,
        remaining=remaining,
    )


def format_seconds(seconds: float) -> str:
    """``42s``, ``3m05s`` or ``1h02m``: a duration as a log line reads it.

    Examples
    --------
    >>> from bayeval.models.progress import format_seconds
    >>> format_seconds(4.6), format_seconds(185), format_seconds(3725)
    ('5s', '3m05s', '1h02m')
    """
    s = max(round(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Reporter:
    """nutpie's ``progress_callback`` that writes a run's :class:`Status` to a stream.

    Parameters
    ----------
    tune, draws : int
        Warm-up and kept draws per chain, as given to ``nutpie.sample``.
    terminal : bool
        One line rewritten in place (a terminal), or a plain line every ``interval`` seconds
        (a log: no carriage return, no escape code).
    stream : text stream, optional
        Where to write; default: ``sys.stderr`` as it is when a line is written.
    clock : callable, default time.monotonic
        Seconds, read when the reporter is made (the start) and at each callback.
    interval : float, optional
        Seconds between two lines in a log; default :data:`LOG_INTERVAL`.

    Examples
    --------
    >>> import io
    >>> from types import SimpleNamespace as Chain
    >>> from bayeval.models.progress import Reporter
    >>> now = iter([0.0, 20.0, 40.0])        # the start, then one reading per callback
    >>> log = io.StringIO()
    >>> report = Reporter(tune=10, draws=30, terminal=False, stream=log,
    ...                   clock=lambda: next(now), interval=15.0)
    >>> report([Chain(finished_draws=20, divergences=1, tuning=False, started=True)])
    >>> report([Chain(finished_draws=40, divergences=1, tuning=False, started=True)])
    >>> report.finish()
    >>> print(log.getvalue(), end="")
    sampling: 20/40 draws (warm-up 10/10, kept 10/30), 1 divergence, 20s elapsed, about 20s left
    sampled: 40 draws (1 chain x (10 warm-up + 30 kept)), 1 divergence, in 40s
    """

    def __init__(
        self,
        *,
        tune: int,
        draws: int,
        terminal: bool,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float | None = None,
    ):
        self.tune, self.draws, self.terminal = tune, draws, terminal
        self._stream = stream
        self._clock = clock
        self.interval = LOG_INTERVAL if interval is None else interval
        self._start = clock()
        self._next_line = self._start + self.interval
        self._lock = threading.Lock()  # nutpie calls from its own thread
        self._last: Status | None = None
        self._open = False  # a terminal line waits for its newline

    def __call__(self, chains: Sequence[Any]) -> None:
        """Take nutpie's progress of every chain; write a line when one is due."""
        now = self._clock()
        status = sampling_status(
            chains, tune=self.tune, draws=self.draws, elapsed=now - self._start
        )
        with self._lock:
            self._last = status
            if self.terminal:
                self._rewrite(status.line())
            elif now >= self._next_line and status.done < status.total:
                self._write(status.line() + "\n")
                self._next_line = now + self.interval

    @property
    def status(self) -> Status | None:
        """The latest status (None before nutpie's first callback)."""
        return self._last

    def finish(self) -> None:
        """Write the totals of the finished run (from nutpie's last callback)."""
        with self._lock:
            if self._last is None:
                return
            line = self._last.final_line()
            if self.terminal:
                self._rewrite(line)
                self._end_line()
            else:
                self._write(line + "\n")

    def abandon(self) -> None:
        """End a terminal line left open (the run failed): what follows starts on its own."""
        with self._lock:
            self._end_line()

    def _rewrite(self, line: str) -> None:
        # a line wider than the terminal wraps, and "\r" would rewrite only its last row
        width = shutil.get_terminal_size(fallback=(100, 24)).columns - 1
        self._write("\r" + line[:width] + "\x1b[K")
        self._open = True

    def _end_line(self) -> None:
        if self._open:
            self._write("\n")
            self._open = False

    def _write(self, text: str) -> None:
        stream = sys.stderr if self._stream is None else self._stream
        stream.write(text)
        stream.flush()


def in_kernel() -> bool:
    """Whether the code runs in a Jupyter kernel, whose cells show nutpie's HTML display."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    kernel = get() if get is not None else None
    return kernel is not None and getattr(kernel, "kernel", None) is not None


def watched() -> bool:
    """Whether someone watches: stderr is a terminal, or the code runs in a Jupyter kernel.

    A Jupyter kernel's stderr is not a terminal, but its cells show a progress bar.
    """
    return sys.stderr.isatty() or in_kernel()


@contextmanager
def nutpie_progress(progress: bool, *, tune: int, draws: int) -> Iterator[dict]:
    """The options of a ``nutpie.sample`` call that show its progress, and the last line.

    With ``progress`` False nothing is shown; in a Jupyter kernel, nutpie's own display;
    otherwise a :class:`Reporter` on stderr, a line rewritten in place where stderr is a
    terminal and a line every :data:`LOG_INTERVAL` seconds where it is not. The totals are
    written when the block ends without an error.

    Parameters
    ----------
    progress : bool
    tune, draws : int
        Warm-up and kept draws per chain, as given to ``nutpie.sample``.

    Yields
    ------
    dict
        Keyword arguments for ``nutpie.sample`` (``progress_bar`` and, where a reporter
        shows the progress, ``progress_callback`` and ``progress_rate``).

    Examples
    --------
    >>> from bayeval.models.progress import nutpie_progress
    >>> with nutpie_progress(False, tune=10, draws=20) as options:
    ...     options
    {'progress_bar': False}
    """
    if not progress:
        yield {"progress_bar": False}
        return
    if in_kernel() and not sys.stderr.isatty():
        yield {"progress_bar": True}
        return
    reporter = Reporter(tune=tune, draws=draws, terminal=sys.stderr.isatty())
    options = {
        "progress_bar": False,
        "progress_callback": reporter,
        "progress_rate": PROGRESS_RATE_MS,
    }
    try:
        yield options
    except BaseException:
        reporter.abandon()
        raise
    reporter.finish()
