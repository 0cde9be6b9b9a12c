"""Recipes across training runs on the command line (analyze --runs) and their bootstrap twin."""

import json
import warnings
from importlib import resources

import jsonschema
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import bayeval as be
from bayeval.analyses.runs import bootstrap_recipe_effect
from bayeval.cli import main


def _frame(seed_sd=0.4, n_tasks=30, seed=0):
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.2, n_tasks)
    rows = []
    for recipe, base in (("rl", 0.6), ("sft", 0.0)):
        for run in range(3):
            offset = rng.normal(0, seed_sd)
            for t in range(n_tasks):
                p = 1 / (1 + np.exp(-(base + offset + difficulty[t])))
                for trial in range(2):
                    rows.append(
                        {
                            "system": recipe,
                            "seed": f"s{run}",
                            "task": f"t{t}",
                            "trial": trial,
                            "success": int(rng.random() < p),
                        }
                    )
    return pd.DataFrame(rows)


def _observed_effect(df, candidate, baseline):
    """Mean over each recipe's checkpoints of their mean per-task pass@1, by pandas."""
    per_task = df.groupby(["system", "seed", "task"])["success"].mean()
    per_checkpoint = per_task.groupby(["system", "seed"]).mean()
    recipe = per_checkpoint.groupby("system").mean()
    return recipe[candidate] - recipe[baseline], per_task


def test_recipe_bootstrap_matches_pandas_and_the_standard_error_of_a_mean():
    df = _frame()
    data = be.from_frame(df, run="seed")
    out = bootstrap_recipe_effect(data, "rl", "sft", n_boot=4000, seed=1)
    effect, per_task = _observed_effect(df, "rl", "sft")
    assert out["effect_mean"].item() == pytest.approx(effect, abs=1e-12)
    assert out["n_runs"].to_series().to_dict() == {"rl": 3, "sft": 3}
    assert out["n_tasks"].item() == 30
    # resampling tasks: the effect is the mean over tasks of d_j, so the bootstrap sd is the
    # plug-in standard error sd(d) / sqrt(J)
    d = per_task.loc["rl"].groupby("task").mean() - per_task.loc["sft"].groupby("task").mean()
    se = d.std(ddof=0) / np.sqrt(len(d))
    lower, upper = out["effect_interval"].values
    assert (upper - lower) / (2 * 1.96) == pytest.approx(se, rel=0.1)
    assert [lower, upper] == np.quantile(out["effect"].values, [0.025, 0.975]).tolist()
    assert out["prob_positive"].item() == np.mean(out["effect"].values > 0)
    new = bootstrap_recipe_effect(data, "rl", "sft", runs="new", n_boot=4000, seed=1)
    assert new["effect_mean"].item() == out["effect_mean"].item()
    new_lower, new_upper = new["effect_interval"].values
    assert new_upper - new_lower > upper - lower  # seeds add spread
    with pytest.raises(ValueError, match="not a recipe"):
        bootstrap_recipe_effect(data, "rl", "dpo")
    with pytest.raises(ValueError, match="from_frame"):
        bootstrap_recipe_effect(
            be.from_frame(df.drop(columns="seed").drop_duplicates(["system", "task", "trial"])),
            "rl",
            "sft",
        )


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    path = tmp_path_factory.mktemp("runs") / "ckpts.csv"
    _frame().to_csv(path, index=False)
    return path


def test_analyze_runs_prints_and_writes_the_recipe_comparison(ckpts, tmp_path):
    out_json = tmp_path / "out.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        result = CliRunner().invoke(
            main,
            [
                "analyze",
                str(ckpts),
                "--reader-option",
                "run=seed",
                "--compare",
                "rl",
                "sft",
                "--runs",
                "observed",
                "--draws",
                "200",
                "--chains",
                "2",
                "--tune",
                "300",
                "--n-boot",
                "500",
                "--json",
                str(out_json),
            ],
        )
    assert result.exit_code == 0, result.output
    assert "recipes (these checkpoints" in result.output
    record = json.loads(out_json.read_text())
    schema = json.loads(
        resources.files("bayeval.report").joinpath("schemas/report.schema.json").read_text()
    )
    jsonschema.validate(record, schema)
    row = record["recipes"]["rows"][0]
    effect, _ = _observed_effect(pd.read_csv(ckpts), "rl", "sft")
    assert row["bootstrap_estimate"] == pytest.approx(effect, abs=1e-12)
    assert sorted(row["checkpoints"]) == sorted(
        f"{r}/s{i}" for r in ("rl", "sft") for i in range(3)
    )
    assert row["bayes_lower"] < row["bayes_mean"] < row["bayes_upper"]
    assert record["recipes"]["sigma_run"]["lower"] > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--compare", "rl", "sft", "--runs", "new"], "--reader-option run=COLUMN"),
        (
            ["--reader-option", "run=seed", "--compare", "rl", "dpo", "--runs", "new"],
            "not a recipe",
        ),
        (
            [
                "--reader-option",
                "run=seed",
                "--compare",
                "rl",
                "sft",
                "--runs",
                "new",
                "--estimand",
                "tasks",
            ],
            "population estimand",
        ),
        (["--reader-option", "run=seed", "--runs", "observed"], "give --compare"),
    ],
)
def test_analyze_runs_refuses_before_fitting(ckpts, tmp_path, monkeypatch, args, message):
    monkeypatch.setattr(be, "fit", lambda *a, **k: pytest.fail("fit must not run"))
    path = ckpts
    if "run=seed" not in args:  # one checkpoint per recipe, read without runs
        df = pd.read_csv(ckpts)
        path = tmp_path / "one_seed.csv"
        df[df["seed"] == "s0"].drop(columns="seed").to_csv(path, index=False)
    result = CliRunner().invoke(main, ["analyze", str(path), *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
