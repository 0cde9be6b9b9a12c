"""selection_bias (the winner's curse) against closed forms."""

import math

import numpy as np
import pytest
from scipy import stats

from bayeval.planning import _expected_max_normal, selection_bias


def exact_binomial_optimism(m, episodes, p):
    """E[max of m iid Binomial(N, p)] / N - p, from E[X] = sum_x P(X >= x)."""
    x = np.arange(1, episodes + 1)
    return float(np.sum(1 - stats.binom.cdf(x - 1, episodes, p) ** m)) / episodes - p


@pytest.mark.parametrize(
    "m, expected",
    [
        (1, 0.0),
        (2, 1 / math.sqrt(math.pi)),
        (3, 3 / (2 * math.sqrt(math.pi))),
        (4, 6 / math.pi**1.5 * math.atan(math.sqrt(2))),
    ],
)
def test_expected_max_of_normals(m, expected):
    assert _expected_max_normal(m) == pytest.approx(expected, abs=1e-10)


def test_expected_max_of_eight_normals_by_simulation():
    z = np.random.default_rng(0).standard_normal((400_000, 8)).max(axis=1)
    assert _expected_max_normal(8) == pytest.approx(z.mean(), abs=4 * z.std() / 632)


def test_issue_example_eight_checkpoints():
    # eight equally good checkpoints, true pass@1 0.85, 160 episodes each
    out = selection_bias(8, n_tasks=160, p=0.85, n_sim=40_000, seed=1)
    sigma = math.sqrt(0.85 * 0.15 / 160)
    assert float(out["normal_approximation"]) == pytest.approx(sigma * 1.4236003, rel=1e-6)
    assert float(out["normal_approximation"]) == pytest.approx(0.040, abs=0.001)
    exact = exact_binomial_optimism(8, 160, 0.85)
    assert abs(float(out["optimism"]) - exact) < 4 * float(out["optimism_se"])
    assert (
        abs(exact - float(out["normal_approximation"])) < 0.0015
    )  # skew at 0.85 lowers it a little
    assert float(out["prob_best_picked"]) == 1.0 and float(out["regret"]) == 0.0
    assert all(out[name].dims == () for name in out.data_vars)
    assert out.attrs == {"m": 8, "n_tasks": 160, "trials": 1, "n_sim": 40_000, "seed": 1}


def test_trials_and_tasks_enter_as_episodes_without_task_spread():
    a = selection_bias(5, n_tasks=200, trials=1, p=0.5, n_sim=20_000, seed=2)
    b = selection_bias(5, n_tasks=50, trials=4, p=0.5, n_sim=20_000, seed=3)
    exact = exact_binomial_optimism(5, 200, 0.5)
    for out in (a, b):
        assert abs(float(out["optimism"]) - exact) < 4 * float(out["optimism_se"])
        assert float(out["normal_approximation"]) == pytest.approx(exact, rel=0.02)


def test_shared_task_spread_keeps_bias_of_trial_noise():
    # with task difficulty shared and the truth on these tasks, the noise is trial noise only:
    # sd^2 = mean_j p_j (1 - p_j) / (trials * n_tasks), below the binomial's p (1 - p)
    out = selection_bias(4, n_tasks=50, trials=4, p=0.5, sd_task=1.5, n_sim=20_000, seed=4)
    flat = selection_bias(4, n_tasks=50, trials=4, p=0.5, n_sim=20_000, seed=4)
    assert math.isnan(float(out["normal_approximation"]))
    assert float(out["optimism"]) < float(flat["optimism"])


def test_a_clearly_better_checkpoint_is_picked():
    out = selection_bias(3, n_tasks=500, p=[0.5, 0.5, 0.8], n_sim=2000, seed=0)
    assert float(out["prob_best_picked"]) == 1.0
    assert abs(float(out["optimism"])) < 5 * math.sqrt(0.8 * 0.2 / 500) / math.sqrt(2000) + 1e-3
    spread = selection_bias(8, n_tasks=100, p=0.6, sd_between=0.5, n_sim=4000, seed=0)
    assert 0 < float(spread["prob_best_picked"]) < 1 and float(spread["regret"]) > 0


def test_reproducible():
    first = selection_bias(4, 30, n_sim=500, seed=9)
    assert first.identical(selection_bias(4, 30, n_sim=500, seed=9))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"m": 0}, ValueError, "m must be an integer >= 1"),
        ({"n_tasks": 2.5}, TypeError, "n_tasks must be an integer"),
        ({"p": 1.0}, ValueError, "strictly between 0 and 1"),
        ({"p": [0.5, 0.6]}, ValueError, "sequence of m=3 probabilities"),
        ({"sd_between": -1}, ValueError, "sd_between must be a non-negative number"),
        ({"sd_task": float("inf")}, ValueError, "sd_task must be a non-negative number"),
        ({"n_sim": 1}, ValueError, "n_sim must be an integer >= 2"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    args = {"m": 3, "n_tasks": 10, **kwargs}
    with pytest.raises(error, match=match):
        selection_bias(**args)
