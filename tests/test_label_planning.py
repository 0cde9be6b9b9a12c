"""required_labels: the PPI++ closed form, checked against arithmetic and a simulation."""

import math

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval.label_planning import judge_correlation


def test_without_a_judge_it_is_the_classical_count():
    # z^2 p (1 - p) / h^2, z = 1.959964 (95%)
    want = math.ceil(1.959963984540054**2 * 0.3 * 0.7 / 0.04**2)
    assert be.required_labels(10**6, half_width=0.04, rate=0.3, correlation=0.0) == want


def test_closed_form_with_a_correlation():
    n_judged, rho, p, h = 4000, 0.8, 0.6, 0.025
    z = 1.959963984540054
    n = (p * (1 - p) * (1 - rho**2)) / ((h / z) ** 2 - rho**2 * p * (1 - p) / n_judged)
    assert be.required_labels(n_judged, half_width=h, rate=p, correlation=rho) == math.ceil(n)


def test_correlation_from_sensitivity_and_specificity():
    rng = np.random.default_rng(0)
    y = rng.random(400_000) < 0.3
    j = np.where(y, rng.random(y.size) < 0.85, rng.random(y.size) < 0.1)
    got = judge_correlation(0.3, sensitivity=0.85, specificity=0.9)
    assert got == pytest.approx(np.corrcoef(y, j)[0, 1], abs=0.005)


def test_refusals():
    with pytest.raises(ValueError, match="out of reach"):
        be.required_labels(100, half_width=0.01, rate=0.5, correlation=0.9)
    with pytest.raises(TypeError, match="not both"):
        be.required_labels(100, half_width=0.1, rate=0.5, correlation=0.5, sensitivity=0.9)
    with pytest.raises(TypeError, match="sensitivity= and specificity="):
        be.required_labels(100, half_width=0.1, rate=0.5, sensitivity=0.9)
    with pytest.raises(ValueError, match="sensitivity must be"):
        be.required_labels(100, half_width=0.1, rate=0.5, sensitivity=1.2, specificity=0.9)


def test_simulated_intervals_attain_the_target_width():
    n_judged, p, se, sp, h = 3000, 0.7, 0.92, 0.8, 0.03
    n = be.required_labels(n_judged, half_width=h, rate=p, sensitivity=se, specificity=sp)
    rng = np.random.default_rng(1)
    widths = []
    for _ in range(60):
        y = rng.random(n_judged) < p
        j = np.where(y, rng.random(n_judged) < se, rng.random(n_judged) < 1 - sp)
        lab = np.zeros(n_judged, bool)
        lab[rng.choice(n_judged, n, replace=False)] = True
        df = pd.DataFrame(
            {
                "system": "A",
                "task": np.arange(n_judged),
                "j": j.astype(int),
                "h": np.where(lab, y, np.nan),
            }
        )
        data = be.from_frame(df, judge="j", success="h", label_design="random")
        out = be.bootstrap.ppi(data, "A", unit="trial")
        widths.append(np.diff(out["estimate_interval"].values[0])[0] / 2)
    mean, sd = np.mean(widths), np.std(widths) / np.sqrt(len(widths))
    assert abs(mean - h) < 4 * sd + 0.0005  # attains the target on average
    # the judge saves labels against the labelled-only count
    assert n < be.required_labels(n_judged, half_width=h, rate=p, correlation=0.0)
