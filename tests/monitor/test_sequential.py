"""The anytime-valid confidence sequences and the gates that read a checkpoint store."""

import itertools

import numpy as np
import pytest
from scipy import integrate, stats

import bayeval as be
from bayeval.monitor import (
    CheckpointStore,
    betting_capital,
    betting_cs,
    log_mixture_martingale,
    monitor_paired,
    monitor_rate,
    rate_cs,
)


# -- rate: Beta-binomial mixture --------------------------------------------------------------
@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 2.0)])
def test_mixture_martingale_equals_the_integral(prior):
    a, b = prior
    for s, n, p in [(3, 10, 0.2), (0, 5, 0.6), (17, 20, 0.9)]:

        def integrand(q, s=s, n=n, p=p):
            return (q / p) ** s * ((1 - q) / (1 - p)) ** (n - s) * stats.beta.pdf(q, a, b)

        direct, _ = integrate.quad(integrand, 0, 1, limit=200)
        got = np.exp(log_mixture_martingale(s, n, p, prior))
        assert got == pytest.approx(direct, rel=1e-8)


def test_uniform_mixture_boundary_is_robbins_formula():
    # Robbins (1970): with a uniform mixture the CS is {p : (n + 1) Binom(S; n, p) > alpha}
    successes, trials = np.array([3, 4, 0, 6]), np.array([10, 10, 5, 10])
    lower, upper = rate_cs(successes, trials, ci_prob=0.9)
    s, n = np.cumsum(successes), np.cumsum(trials)
    for lo, hi, s_t, n_t in zip(lower, upper, s, n, strict=True):
        assert (n_t + 1) * stats.binom.pmf(s_t, n_t, lo) == pytest.approx(0.1, rel=1e-8)
        assert (n_t + 1) * stats.binom.pmf(s_t, n_t, hi) == pytest.approx(0.1, rel=1e-8)


def test_rate_cs_edges():
    lower, upper = rate_cs([0, 0], [0, 4])
    assert (lower[0], upper[0]) == (0.0, 1.0)  # no data yet
    assert lower[1] == 0.0 and 0 < upper[1] < 1  # no success: the lower end is 0


def test_rate_cs_is_time_uniform_where_a_fixed_interval_is_not():
    rng = np.random.default_rng(11)
    runs, steps, p = 3000, 100, 0.3
    c = rng.binomial(1, p, size=(runs, steps))
    lower, upper = rate_cs(c, np.ones_like(c))
    missed = ((lower > p) | (upper < p)).any(axis=1)
    s, n = np.cumsum(c, axis=1), np.arange(1, steps + 1)
    wl, wu = be.wilson_interval(s, np.broadcast_to(n, s.shape), ci_prob=0.95)
    wilson_missed = ((np.asarray(wl) > p) | (np.asarray(wu) < p)).any(axis=1)
    assert missed.mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    assert wilson_missed.mean() > 0.2  # peeking at a fixed-sample interval
    lower, upper = rate_cs([300], [1000])  # and it is not trivially wide
    fixed = 2 * 1.96 * np.sqrt(0.3 * 0.7 / 1000)
    assert fixed < upper[0] - lower[0] < 2.5 * fixed


def test_rate_cs_bad_input():
    with pytest.raises(ValueError, match=r"successes must not exceed trials; steps \[1\]"):
        rate_cs([1, 5], [2, 4])
    with pytest.raises(ValueError, match=r"successes must be an array of non-negative.*\[1.5\]"):
        rate_cs([1.5], [2])
    with pytest.raises(ValueError, match="ci_prob must be strictly between 0 and 1; got 1.0"):
        rate_cs([1], [2], ci_prob=1.0)
    with pytest.raises(ValueError, match=r"prior must be a pair .* got \(0, 1\)"):
        rate_cs([1], [2], prior=(0, 1))


# -- betting ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bets", ["mixture", "agrapa", "prpl-eb"])
@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_capital_is_a_martingale_by_exact_enumeration(alternative, bets):
    # every sequence of 10 Bernoulli(0.3) outcomes: E[K_10(0.3)] = 1 exactly for each side
    # (only predictable bets give this); the hedged max of the two is below 1
    p, t = 0.3, 10
    seqs = np.array(list(itertools.product([0.0, 1.0], repeat=t)))
    prob = np.prod(np.where(seqs == 1, p, 1 - p), axis=1)
    capital = betting_capital(seqs, p, alternative=alternative, bets=bets)[:, -1]
    expected = float(prob @ capital)
    if alternative == "two-sided":
        assert 0.5 <= expected <= 1.0
    else:
        assert expected == pytest.approx(1.0, abs=1e-12)
    # under a strictly smaller mean the 'greater' capital is a strict supermartingale
    if alternative == "greater":
        smaller = betting_capital(seqs, 0.4, alternative="greater", bets=bets)[:, -1]
        assert float(prob @ smaller) < 1


def test_betting_cs_covers_uniformly_in_time():
    # the CS misses the truth at some time iff the capital at the truth reaches 1/alpha
    rng = np.random.default_rng(5)
    runs, steps, truth = 2000, 300, 0.1
    x = rng.choice([-1.0, 0.0, 1.0], size=(runs, steps), p=[0.25, 0.4, 0.35])  # mean 0.1
    capital = betting_capital(x, truth, bounds=(-1, 1))
    missed = (capital >= 20).any(axis=1)
    assert missed.mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    for run in range(10):  # and the sequence itself holds the truth wherever the capital is low
        lower, upper = betting_cs(x[run], bounds=(-1, 1), grid=400)
        assert ((lower <= truth) & (truth <= upper))[capital[run] < 20].all()


def test_betting_cs_shrinks_like_the_standard_error():
    x = np.random.default_rng(1).binomial(1, 0.5, size=4000).astype(float)
    lower, upper = betting_cs(x, grid=500)
    width = upper[-1] - lower[-1]
    fixed = 2 * 1.96 * 0.5 / np.sqrt(4000)  # the fixed-sample 95% width
    assert fixed < width < 3 * fixed  # time-uniform costs a bounded factor, not a trivial [0, 1]


def test_one_sided_cs_and_capital_agree_on_the_gate():
    x = np.random.default_rng(2).choice([-1.0, 0.0, 1.0], size=500, p=[0.15, 0.45, 0.4])
    capital = betting_capital(x, 0.0, bounds=(-1, 1), alternative="greater")
    lower, _ = betting_cs(x, bounds=(-1, 1), alternative="greater", grid=4000)
    fired, excluded = capital >= 20, lower > 0.0
    assert fired.any()
    assert (fired[excluded]).all()  # whenever the CS excludes 0, the gate fires
    assert (fired != excluded).mean() < 0.02  # up to the grid step


def test_betting_bad_input():
    with pytest.raises(ValueError, match=r"x must lie in bounds \[0.0, 1.0\].*\[1.5\]"):
        betting_cs([0.2, 1.5])
    with pytest.raises(ValueError, match=r"m must lie strictly inside bounds \(-1.0, 1.0\)"):
        betting_capital([0.0], 1.0, bounds=(-1, 1))
    with pytest.raises(ValueError, match="alternative must be one of"):
        betting_cs([0.5], alternative="bigger")


# -- monitors ---------------------------------------------------------------------------------
def _pair_stream(rng, checkpoints, tasks, p_new, p_old, trials=1):
    stream = []
    for i in range(checkpoints):
        ids = range(i * tasks, (i + 1) * tasks)
        c = np.stack([rng.binomial(trials, p_new, tasks), rng.binomial(trials, p_old, tasks)])
        stream.append(
            (f"ckpt-{i}", be.from_counts(c, trials=trials, systems=["new", "old"], tasks=list(ids)))
        )
    return stream


def test_gate_keeps_its_error_under_peeking():
    # 20 checkpoints of 10 new tasks each, equal rates: the gate looks after every checkpoint
    rng = np.random.default_rng(3)
    runs, checkpoints, tasks = 4000, 20, 10
    x = (
        rng.binomial(1, 0.5, (runs, checkpoints * tasks))
        - rng.binomial(1, 0.5, (runs, checkpoints * tasks))
    ).astype(float)
    capital = betting_capital(x, 0.0, bounds=(-1, 1), alternative="greater")
    ends = np.arange(tasks - 1, checkpoints * tasks, tasks)
    monitored = (capital[:, ends] >= 20).any(axis=1).mean()
    assert monitored <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    # the same stream through monitor_paired fires exactly where the capital says
    stream = [
        (
            i,
            be.from_counts(
                np.stack(
                    [
                        (x[0, i * tasks : (i + 1) * tasks] > 0),
                        (x[0, i * tasks : (i + 1) * tasks] < 0),
                    ]
                ).astype(int),
                trials=1,
                systems=["new", "old"],
                tasks=list(range(i * tasks, (i + 1) * tasks)),
            ),
        )
        for i in range(checkpoints)
    ]
    table = monitor_paired(stream, "new", "old")
    np.testing.assert_allclose(table["capital"], capital[0, ends], rtol=1e-12)


def test_paired_gate_reads_the_store_and_detects_a_real_gain(tmp_path):
    store = CheckpointStore(tmp_path / "run.nc")
    for label, data in _pair_stream(np.random.default_rng(4), 12, 25, 0.75, 0.45, trials=2):
        store.append(label, data)
    table = monitor_paired(store, "new", "old", margin=0.05)
    assert table["fired"].iloc[-1]
    assert table["checkpoint"].tolist() == [f"ckpt-{i}" for i in range(12)]
    assert table["tasks"].iloc[-1] == 300
    worse = monitor_paired(store, "old", "new", alternative="less")
    assert worse["fired"].iloc[-1] and "upper" in worse.columns


def test_paired_gate_refuses_repeated_tasks_and_bad_margin():
    data = be.from_counts([[1, 0], [0, 0]], trials=1, systems=["new", "old"], tasks=["t", "u"])
    with pytest.raises(ValueError, match=r"checkpoint 2 repeats tasks \['t', 'u'\] first seen"):
        monitor_paired([(1, data), (2, data)], "new", "old")
    with pytest.raises(ValueError, match=r"margin must be a number strictly inside \(-1, 1\)"):
        monitor_paired([(1, data)], "new", "old", margin=1.0)
    with pytest.raises(KeyError, match=r"has no system\(s\) \['nope'\]"):
        monitor_paired([(1, data)], "new", "nope")


def test_rate_monitor_matches_rate_cs_and_refuses_several_trials():
    stream = [(i, be.from_counts([[1, 0, 1, 1]], trials=1, systems=["m"])) for i in range(5)]
    table = monitor_rate(stream, "m", threshold=0.4)
    lower, upper = rate_cs([3] * 5, [4] * 5)
    np.testing.assert_array_equal(table["lower"], lower)
    assert table["trials"].tolist() == [4, 8, 12, 16, 20]
    several = [(0, be.from_counts([[1, 2]], trials=3, systems=["m"]))]
    with pytest.raises(ValueError, match=r"checkpoint 0: tasks \[0, 1\] ran more than one"):
        monitor_rate(several, "m")


# -- betting strategies: validity, a hand computation, power ----------------------------------
ALL_BETS = [{"bets": "mixture"}, {"bets": "horizon", "horizon": 100}, {"bets": "agrapa"}]
ALL_BETS.append({"bets": "prpl-eb"})


def _null_differences(rng, runs, steps, margin, trials, population):
    # candidate = baseline + margin on every task: each difference has mean exactly margin
    u = rng.beta(*population, (runs, steps))
    p_old = (1 - abs(margin)) * u + max(-margin, 0.0)
    return (rng.binomial(trials, p_old + margin) - rng.binomial(trials, p_old)) / trials


@pytest.mark.parametrize("how", ALL_BETS, ids=lambda h: h["bets"])
@pytest.mark.parametrize(
    ("margin", "trials", "population"),
    [(0.0, 1, (0.5, 0.5)), (0.0, 4, (0.5, 0.5)), (0.1, 1, (0.3, 3.0)), (-0.2, 4, (4.0, 0.4))],
)
def test_gate_type_one_error_at_the_margin(how, margin, trials, population):
    # null at the margin, bounded differences, symmetric and skewed task populations; the
    # gate is read after every one of 10 looks of 20 tasks
    rng = np.random.default_rng([len(how["bets"]), round(10 * margin) + 5, trials])
    runs, alpha = 2000, 0.05
    x = _null_differences(rng, runs, 200, margin, trials, population)
    capital = betting_capital(x, margin, bounds=(-1, 1), alternative="greater", **how)
    fired = (capital[:, 19::20] >= 1 / alpha).any(axis=1).mean()
    assert fired <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / runs)
    if margin != 0.0:
        return
    # a two-sided test at the true mean keeps its level too
    both = betting_capital(x, margin, bounds=(-1, 1), alternative="two-sided", **how)
    assert (both >= 1 / alpha).any(axis=1).mean() <= alpha + 3 * np.sqrt(alpha * 0.95 / runs)


@pytest.mark.parametrize("how", ALL_BETS, ids=lambda h: h["bets"])
def test_capital_has_mean_one_and_bounded_bets(how):
    # E[K_t] = 1 at the true mean (a test martingale), by simulation with skewed data
    rng = np.random.default_rng(8)
    y = rng.beta(0.4, 2.0, (20000, 40))  # mean 1/6
    for side in ("greater", "less"):
        capital = betting_capital(y, 0.4 / 2.4, alternative=side, **how)
        mean = capital.mean(axis=0)
        se = capital.std(axis=0) / np.sqrt(y.shape[0])
        assert (np.abs(mean - 1) <= 4 * se + 1e-12).all()
    # the bets stay inside the range that keeps every factor >= 1/2, whatever comes next:
    # after a run of wins at the largest bets, the worst outcome loses at most half
    for m, side, worst in [(0.2, "greater", 0.0), (0.9, "less", 1.0)]:
        ahead = [1.0 if side == "greater" else 0.0] * 5
        capital = betting_capital(np.array(ahead + [worst]), m, alternative=side, **how)
        assert capital[-1] / capital[-2] >= 0.5 - 1e-12


def test_capital_by_hand_for_two_observations():
    # bounds (0, 1), null mean 1/2, 'greater', alpha = 0.05: each bet from the step before
    y1, y2, m, budget = 1.0, 0.25, 0.5, 2 * np.log(20)
    mu1 = (0.5 + y1) / 2  # regularised running mean and variance after one step
    var1 = (0.25 + (y1 - mu1) ** 2) / 2

    def wealth(bet1, bet2):
        return (1 + min(bet1, 1.0) * (y1 - m)) * (1 + min(bet2, 1.0) * (y2 - m))

    by_hand = {
        "prpl-eb": wealth(
            np.sqrt(budget / (0.25 * 1 * np.log(2))), np.sqrt(budget / (var1 * 2 * np.log(3)))
        ),
        "agrapa": wealth(0.0, (mu1 - m) / (var1 + (mu1 - m) ** 2)),
        "horizon": wealth(np.sqrt(budget / (0.25 * 50)), np.sqrt(budget / (var1 * 50))),
        "mixture": np.mean(
            [
                wealth(np.sqrt(budget / (0.25 * n)), np.sqrt(budget / (var1 * n)))
                for n in [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
            ]
        ),
    }
    for bets, expected in by_hand.items():
        extra = {"horizon": 50} if bets == "horizon" else {}
        got = betting_capital([y1, y2], m, alternative="greater", bets=bets, **extra)
        assert got[-1] == pytest.approx(expected, rel=1e-12), bets


def test_mixture_has_more_power_than_variance_only_bets():
    # 4 trials per task, true gain 0.037, 400 tasks read after every 20
    # (the design of benchmarks/monitor_power.py)
    rng = np.random.default_rng(12)
    runs = 1500
    u = rng.beta(0.5, 0.5, (runs, 400))
    x = (rng.binomial(4, 0.963 * u + 0.037) - rng.binomial(4, 0.963 * u)) / 4
    power = {}
    for bets in ("mixture", "prpl-eb"):
        capital = betting_capital(x, 0.0, bounds=(-1, 1), alternative="greater", bets=bets)
        power[bets] = (capital[:, 19::20] >= 20).any(axis=1).mean()
    assert power["mixture"] > power["prpl-eb"] + 0.05


def test_bets_bad_input():
    with pytest.raises(ValueError, match=r"bets must be one of \['mixture', 'horizon'"):
        betting_capital([0.5], 0.5, bets="kelly")
    with pytest.raises(ValueError, match="bets='horizon' needs horizon="):
        betting_cs([0.5], bets="horizon")
    with pytest.raises(ValueError, match="horizon is read only with bets='horizon'"):
        betting_capital([0.5], 0.5, horizon=100)
    with pytest.raises(ValueError, match="horizon must be an integer >= 1; got 0"):
        betting_capital([0.5], 0.5, bets="horizon", horizon=0)
    data = be.from_counts([[1, 0], [0, 0]], trials=1, systems=["new", "old"], tasks=["t", "u"])
    table = monitor_paired([(1, data)], "new", "old", bets="horizon", horizon=300)
    assert (table.attrs["bets"], table.attrs["horizon"]) == ("horizon", 300)
