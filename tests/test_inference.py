"""The paired model is the default wherever systems that share tasks are compared."""

import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import bayeval as be
from bayeval import cli
from bayeval.inference import choose_model
from bayeval.report import report_data


def _three_systems(shared=True):
    rng = np.random.default_rng(3)
    c = rng.binomial(4, 0.5, (3, 12))
    n = np.full((3, 12), 4)
    if not shared:  # each system ran its own tasks only: no task has two systems
        rows = [
            {"system": name, "task": f"t{j}", "successes": int(c[s, j]), "trials": 4}
            for s, name in enumerate("ABC")
            for j in range(4 * s, 4 * s + 4)
        ]
        return be.from_frame(
            pd.DataFrame(rows), successes="successes", trials="trials", missing="exclude"
        )
    return be.from_counts(c, n, systems=["A", "B", "C"])


def test_auto_pairs_systems_on_shared_tasks():
    model, reason = choose_model(_three_systems())
    assert model == "logit_normal" and "3 systems share 12 tasks" in reason


@pytest.mark.parametrize(
    "data, expected",
    [
        (be.from_counts([3, 5, 1, 2], trials=10), "one system"),
        (_three_systems(shared=False), "the systems share 0 task(s)"),
    ],
)
def test_auto_falls_back_to_hierarchical(data, expected):
    model, reason = choose_model(data)
    assert model == "hierarchical" and expected in reason


@pytest.mark.parametrize(
    "sampler, model", [("grid", "hierarchical"), ("conjugate", "beta_binomial")]
)
def test_a_sampler_only_one_model_has_decides_it(sampler, model):
    assert choose_model(_three_systems(), sampler)[0] == model


def test_fit_records_the_choice():
    res = be.fit(_three_systems(), sampler="grid", draws=50, chains=1, seed=0)
    attrs = res.tree.attrs
    assert (attrs["model"], attrs["model_requested"]) == ("hierarchical", "auto")
    assert "grid" in attrs["model_choice"]
    assert attrs["inference_library"] == "bayeval" and attrs["created_at"]
    cmp = res.compare("B", "A", estimand="tasks")
    assert (
        cmp.attrs["paired"] is False
        and cmp.attrs["paired_note"].startswith("the hierarchical model")
        and "unpaired" in cmp.attrs["paired_note"]
    )


def test_gate_and_analyze_fit_only_the_compared_systems(monkeypatch, tmp_path):
    """A comparison fits what it needs: the 25-system file's gate once fitted all 25."""
    frame = be.datasets.frame("swebench_verified")
    systems = list(dict.fromkeys(frame["system"]))[:5]
    path = tmp_path / "five.csv"
    frame[frame["system"].isin(systems)].to_csv(path, index=False)
    seen = []
    fit = be.fit

    def spy(data, **kwargs):
        seen.append((list(data.systems), kwargs["model"]))
        return fit(data, **{**kwargs, "model": "hierarchical", "sampler": "grid"})

    monkeypatch.setattr(be, "fit", spy)
    runner = CliRunner()
    result = runner.invoke(
        cli.main,
        [
            "gate",
            str(path),
            "--cluster",
            "cluster",
            "--compare",
            systems[1],
            systems[3],
            "--margin",
            "0.02",
            "--draws",
            "100",
            "--chains",
            "1",
            "--n-boot",
            "200",
        ],
    )
    assert result.exit_code in (0, 1, 3), result.output
    assert seen[-1] == ([systems[1], systems[3]], "auto")
    assert (
        "fitting logit_normal (paired, collapsed form) to 2 system(s) x 500 task(s)"
        in result.output
    )
    result = runner.invoke(
        cli.main,
        [
            "analyze",
            str(path),
            "--cluster",
            "cluster",
            "--compare",
            systems[2],
            systems[0],
            "--compare",
            systems[4],
            systems[0],
            "--draws",
            "100",
            "--chains",
            "1",
            "--n-boot",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    assert seen[-1] == ([systems[0], systems[2], systems[4]], "auto")


def test_report_reads_comparisons_from_their_own_fit():
    data = _three_systems()
    table = be.fit(data, sampler="grid", draws=100, chains=1, seed=0)
    pair = be.fit(data.sel(system=["A", "B"]), sampler="grid", draws=100, chains=1, seed=1)
    out = report_data(table, comparisons=[("B", "A")], n_boot=200, compare_results=pair)
    effect = pair.compare("B", "A", estimand="population")["effect_mean"].item()
    assert out["comparisons"][0]["bayes"]["rows"][0]["effect"] == effect
    assert out["comparison_fit"]["systems"] == ["A", "B"]
    assert {row["system"] for row in out["metrics"]} == {"A", "B", "C"}
    with pytest.raises(ValueError, match="'C' is not a system"):
        report_data(table, comparisons=[("C", "A")], n_boot=200, compare_results=pair)


def _unequal_valid_tasks():
    rows = []
    outcomes = {"A": [1, 1, 0, 1, 0, 1], "B": [1, 1, 1, 1, 1, 0]}
    for system, values in outcomes.items():
        for j, value in enumerate(values):
            for trial in range(3):
                no_verdict = (system == "A" and j == 5) or (system == "B" and j == 0)
                rows.append(
                    {
                        "system": system,
                        "task": f"t{j}",
                        "trial": trial,
                        "success": None if no_verdict else value,
                        "status": "no_verdict" if no_verdict else "ok",
                    }
                )
    return be.from_frame(pd.DataFrame(rows), trial="trial", status="status", missing="exclude")


@pytest.mark.parametrize("model", ["hierarchical", "beta_binomial"])
def test_tasks_comparison_uses_the_tasks_valid_for_both(model):
    """Under missing='exclude' A lacks t5 and B lacks t0: the effect on these tasks is over
    t1..t4 (B - A = mean of (1 - 1, 1 - 0, 1 - 1, 1 - 0) in rates), not B over its five tasks
    against A over its five."""
    data = _unequal_valid_tasks()
    res = be.fit(data, model=model, draws=1000, chains=2, seed=0)
    out = res.compare("B", "A", estimand="tasks")
    assert (out.attrs["n_shared_tasks"], out.attrs["n_dropped_tasks"]) == (4, 2)
    rates = res.task_rates().sel(task=["t1", "t2", "t3", "t4"])
    expected = (rates.sel(system="B") - rates.sel(system="A")).mean("task")
    np.testing.assert_allclose(out["effect"].values, expected.values, atol=0.05)
    assert float(out["effect_mean"]) == pytest.approx(float(expected.mean()), abs=0.01)
    boot = be.bootstrap.compare(data, "B", "A", unit="trial", n_boot=200, seed=0)
    assert boot.attrs["n_shared_tasks"] == 4


def test_report_card_says_where_its_comparisons_come_from():
    from bayeval.report import build_report

    data = _three_systems()
    table = be.fit(data, sampler="grid", draws=100, chains=1, seed=0)
    pair = be.fit(data.sel(system=["A", "B"]), sampler="grid", draws=100, chains=1, seed=1)
    report = report_data(table, comparisons=[("B", "A")], n_boot=200, compare_results=pair)
    text = build_report(table, fmt="markdown", plots=False, data=report)
    assert (
        "The comparisons come from the paired `hierarchical` model fitted to the compared "
        "systems (A, B; sampler `grid`)" in text
    )


def test_k_beyond_the_trials_is_refused_before_any_fit(monkeypatch, tmp_path):
    """LiveCodeBench holds one- and ten-sample systems: k = 10 is computed where the trials
    allow it (the fit runs), and a k that no system's trials allow is refused before it."""
    frame = be.datasets.frame("livecodebench")
    path = tmp_path / "lcb.csv"
    frame.to_csv(path, index=False)
    spec = be.datasets.DATASETS["livecodebench"]["columns"]
    most = int(frame[spec["trials"]].max())

    def run(ks):
        called = []
        monkeypatch.setattr(be, "fit", lambda *a, **k: called.append(1))
        args = ["analyze", str(path), "--successes", spec["successes"]]
        args += ["--trials", spec["trials"], "--k", ks]
        return CliRunner().invoke(cli.main, args), called

    result, called = run(f"1,{most + 1}")
    assert result.exit_code == 2, result.output
    assert f"k={most + 1} needs at least {most + 1} valid trials" in result.output
    assert f"use k <= {most}" in result.output and not called
    _, called = run(f"1,{most}")
    assert called  # some systems' trials allow k = most: the fit runs


@pytest.mark.parametrize(
    "error, code",
    [(ValueError("bad column"), 2), (EOFError("truncated"), 4), (RuntimeError("fell over"), 4)],
)
@pytest.mark.parametrize("flag", [[], ["--traceback"]])
def test_errors_keep_their_exit_codes_with_traceback(monkeypatch, tmp_path, error, code, flag):
    def boom(*args, **kwargs):
        raise error

    path = tmp_path / "t.csv"
    pd.DataFrame(
        {"system": ["A", "A", "B", "B"], "task": ["x", "y", "x", "y"], "success": [1, 0, 1, 1]}
    ).to_csv(path, index=False)
    monkeypatch.setattr(be, "fit", boom)
    result = CliRunner().invoke(
        cli.main, [*flag, "gate", str(path), "--compare", "B", "A", "--margin", "0.02"]
    )
    assert result.exit_code == code, result.output
    assert ("Traceback" in result.output) == bool(flag)
    assert "Aborted" not in result.output


def test_crossed_bounds_of_a_paired_fit_come_from_one_joint_fit_per_bound():
    """Under missing='bounds' a paired comparison fits both systems' crossed counts jointly:
    subtracting draws of the two bounds' separate fits loses the pairing (wider)."""
    from scipy import special

    # two trials per task: the collapsed form's fixed grid (three took 5x as long)
    rng = np.random.default_rng(3)
    e = rng.normal(0, 1.5, 80)
    rows = []
    for system, a in (("A", 0.0), ("B", 0.3)):
        p = special.expit(a + e + rng.normal(0, 0.3, 80))
        for j in range(80):
            for _ in range(2):
                miss = rng.random() < 0.08
                rows.append(
                    {
                        "system": system,
                        "task": f"t{j}",
                        "status": "error" if miss else "ok",
                        "success": None if miss else int(rng.random() < p[j]),
                    }
                )
    data = be.from_frame(pd.DataFrame(rows), status="status", missing="bounds")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # small fits
        res = be.fit(data, model="logit_normal", draws=1000, tune=1000, chains=2, seed=0)
        out = res.compare("B", "A")
        direct = be.fit(
            data.crossed("B", "A", "lower"),
            model="logit_normal",
            draws=1000,
            tune=1000,
            chains=2,
            seed=0,
        )
    assert out.attrs["crossed_bounds"] == "one joint fit per crossed bound"
    by_hand = direct.pass_at_k().sel(system="B") - direct.pass_at_k().sel(system="A")
    np.testing.assert_array_equal(out["effect"].sel(missing_bound="lower").values, by_hand.values)
    draws = res.pass_at_k()
    swapped = draws.sel(system="B", missing_bound="lower") - draws.sel(
        system="A", missing_bound="upper"
    )
    # the ratio of the two sds was 0.81-0.87 over four seeds (0.70-0.89 with 300 draws)
    assert float(out["effect"].sel(missing_bound="lower").std()) < 0.93 * float(swapped.std())


def test_draws_default_to_the_models_for_the_form_it_samples(monkeypatch):
    """``draws=None``: 1500 for the logit-normal model's full-latent form (its slowest spreads
    mix at a third to a half of the draws), 1000 for its integrated forms and other models."""
    from bayeval.models import get_model
    from bayeval.models.logit_normal import FULL_LATENT_DRAWS

    seen = {}

    def capture(self, data, **kw):  # stop before sampling: only the draws asked for matter
        seen["draws"] = kw["draws"]
        raise RuntimeError("captured")

    spec = get_model("logit_normal")
    monkeypatch.setattr(type(spec), "sample", capture)
    latent = be.datasets.load("terminal_bench", missing="fail")  # five trials: full-latent
    assert spec.sampling_form(latent)[0] == "full-latent"
    collapsed = be.from_counts([[1, 0, 1, 1], [0, 0, 1, 1]], trials=1)
    for data, expected in ((latent, FULL_LATENT_DRAWS), (collapsed, 1000)):
        with pytest.raises(RuntimeError, match="captured"), warnings.catch_warnings():
            warnings.simplefilter("ignore", be.BayevalWarning)  # one trial: said, not tested
            be.fit(data, model="logit_normal")
        assert seen["draws"] == expected
    with pytest.raises(RuntimeError, match="captured"):
        be.fit(latent, model="logit_normal", draws=200)
    assert seen["draws"] == 200
    assert FULL_LATENT_DRAWS == 1500 and get_model("judge").default_draws("full-latent") == 1000
