"""A fit's sampling progress: the status of nutpie's chains, its lines, and a real fit's."""

import io
import re
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import bayeval as be
from bayeval.models import progress


def _chain(finished, divergences=0, tune=None, started=True):
    """What nutpie's progress callback gives of a chain (``tuning`` while under ``tune``)."""
    tuning = tune is not None and finished < tune
    return SimpleNamespace(
        finished_draws=finished, divergences=divergences, tuning=tuning, started=started
    )


class FakeClock:
    """Seconds that move only when a test says so."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_time_left_is_the_draws_left_at_the_rate_so_far():
    """4 chains x (50 warm-up + 200 kept) = 1000 draws: 250 done in 10 s leaves 750 at
    25 a second, 30 s; 800 done in 40 s leaves 200 at 20 a second, 10 s."""
    clock = FakeClock()
    log = io.StringIO()
    report = progress.Reporter(tune=50, draws=200, terminal=False, stream=log, clock=clock)
    clock.now += 10.0
    report([_chain(f, tune=50) for f in (100, 60, 50, 40)])
    first = report.status
    assert (first.done, first.total) == (250, 1000)
    assert (first.warmup_done, first.sampled, first.warming_up) == (190, 60, 1)
    assert first.elapsed == pytest.approx(10.0)
    assert first.remaining == pytest.approx(30.0)
    clock.now += 30.0
    report([_chain(f, tune=50) for f in (250, 250, 200, 100)])
    assert report.status.remaining == pytest.approx(10.0)
    assert report.status.warming_up == 0
    assert "800/1000 draws" in report.status.line()
    assert report.status.line().endswith("40s elapsed, about 10s left")


def test_no_estimate_before_the_first_draw():
    status = progress.sampling_status(
        [_chain(0, tune=10, started=False)] * 2, tune=10, draws=20, elapsed=3.0
    )
    assert status.remaining is None and "left" not in status.line()
    assert "warming up: 0/60 draws" in status.line()
    assert "(counted after warm-up)" in status.line()


def test_a_log_gets_a_plain_line_each_interval_and_the_totals():
    clock = FakeClock()
    log = io.StringIO()
    report = progress.Reporter(
        tune=10, draws=90, terminal=False, stream=log, clock=clock, interval=15.0
    )
    # callbacks every 5 s: lines at 15 s and 30 s (the interval counts from the last line);
    # none at 40 s, when every draw is done and the totals follow
    for step in range(1, 9):
        clock.now += 5.0
        report([_chain(min(14 * step, 100), divergences=step // 3, tune=10)] * 2)
    report.finish()
    lines = log.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("sampling: 84/200 draws") and "15s elapsed" in lines[0]
    assert lines[1].startswith("sampling: 168/200 draws") and "30s elapsed" in lines[1]
    assert lines[2] == (
        "sampled: 200 draws (2 chains x (10 warm-up + 90 kept)), 4 divergences, in 40s"
    )
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()


def test_a_terminal_gets_one_line_rewritten_in_place():
    clock = FakeClock()
    screen = io.StringIO()
    report = progress.Reporter(tune=5, draws=5, terminal=True, stream=screen, clock=clock)
    for finished in (3, 7, 10):
        clock.now += 1.0
        report([_chain(finished, tune=5)])
    report.finish()
    out = screen.getvalue()
    assert out.count("\r") == 4 and out.count("\n") == 1 and out.endswith("\x1b[K\n")
    assert out.split("\r")[-1].startswith("sampled: 10 draws (1 chain x (5 warm-up + 5 kept))")


def test_a_failed_run_ends_the_terminal_line(monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr("sys.stderr", screen)
    monkeypatch.setattr(screen, "isatty", lambda: True, raising=False)
    with pytest.raises(KeyError), progress.nutpie_progress(True, tune=5, draws=5) as options:
        options["progress_callback"]([_chain(2, tune=5)])
        raise KeyError("the sampler failed")
    assert screen.getvalue().startswith("\rwarming up: 2/10 draws")
    assert screen.getvalue().endswith("\n") and "sampled" not in screen.getvalue()


def test_a_jupyter_kernel_keeps_nutpies_display(monkeypatch):
    monkeypatch.setattr(progress, "in_kernel", lambda: True)
    with progress.nutpie_progress(True, tune=5, draws=5) as options:
        assert options == {"progress_bar": True}
    with progress.nutpie_progress(False, tune=5, draws=5) as options:
        assert options == {"progress_bar": False}


def test_the_final_line_counts_the_fits_divergences(capsys):
    """A full-latent fit with very wide priors and a 10-draw warm-up diverges; the last
    line's count is the fit's own (its sample statistics after warm-up)."""
    rng = np.random.default_rng(0)
    data = be.from_counts(rng.integers(0, 5, size=(13, 6)), trials=4)
    wide = {"sigma_task": 100.0, "sigma_task_system": 100.0, "alpha": (0.0, 100.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # a fit meant to diverge
        res = be.fit(
            data,
            model="logit_normal",
            draws=100,
            chains=2,
            tune=10,
            seed=1,
            priors=wide,
            progress=True,
        )
    err = capsys.readouterr().err
    final = [line for line in err.splitlines() if line.startswith("sampled:")]
    assert len(final) == 1, err
    drawn, divergences = re.match(r"sampled: (\d+) draws .*, (\d+) divergences?", final[0]).groups()
    assert int(drawn) == 2 * (10 + 100)
    diverged = res.diagnostics["divergences"]
    assert diverged > 0  # the case is one that diverges
    assert int(divergences) == diverged == int(res.tree["sample_stats"]["diverging"].sum())
    assert "\r" not in err and "\x1b" not in err
