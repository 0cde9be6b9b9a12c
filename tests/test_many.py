"""fit_many: one analysis per group, serially or on a local Dask cluster."""

import sys

import numpy as np
import pandas as pd
import pytest

from bayeval.data import from_frame
from bayeval.many import FitManyError, fit_many, group_seed, split_options
from bayeval.results import fit

COUNTS = {"success": None, "successes": "successes", "trials": "trials"}
FAST = {
    "model": "hierarchical",
    "sampler": "grid",
    "draws": 60,
    "chains": 2,
    "log_likelihood": False,
}


def _frame(n_groups=3, n_tasks=12, seed=0):
    # more than 10 tasks: fewer, mostly all-or-nothing tasks make the hierarchical fit warn
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(n_groups):
        for system in ("A", "B"):
            p = rng.beta(1, 1, n_tasks)
            for t in range(n_tasks):
                rows.append(
                    {
                        "bench": f"b{g}",
                        "split": g % 2,
                        "system": system,
                        "task": t,
                        "successes": int(rng.binomial(5, p[t])),
                        "trials": 5,
                    }
                )
    return pd.DataFrame(rows)


def test_each_group_equals_its_own_serial_fit():
    df = _frame()
    many = fit_many(df, by="bench", seed=7, **COUNTS, **FAST)
    assert many.groups == ["b0", "b1", "b2"]
    for key in many.groups:
        sub = df[df["bench"] == key].drop(columns="bench")
        alone = fit(from_frame(sub, **COUNTS), seed=group_seed(7, key), **FAST)
        got = many.results(key).tree
        for name in ("mu", "kappa"):
            np.testing.assert_array_equal(
                got["posterior"][name].values, alone.tree["posterior"][name].values
            )
        expected = alone.summary(k=1).set_index(["estimand", "system"])["mean"]
        table = many.dataset["pass_at_1_mean"].sel(group=key).to_series()
        np.testing.assert_array_equal(
            table.reorder_levels(["estimand", "system"]).loc[expected.index].values, expected.values
        )


def test_dataset_dims_and_frame_rows():
    df = _frame()
    many = fit_many(df, by="bench", **COUNTS, **FAST)
    ds = many.dataset
    assert ds["pass_at_1_interval"].dims == ("group", "estimand", "system", "ci_bound")
    assert ds["model"].dims == ("group",)
    assert set(ds["model"].values) == {"hierarchical"}
    assert np.isnan(ds["max_rhat"].values).all()  # the grid engine has no MCMC diagnostics
    lower = ds["pass_at_1_interval"].sel(ci_bound="lower")
    upper = ds["pass_at_1_interval"].sel(ci_bound="upper")
    assert bool((lower < ds["pass_at_1_mean"]).all() and (ds["pass_at_1_mean"] < upper).all())
    frame = many.to_frame()
    assert len(frame) == 3 * 2  # one row per (group, system)
    assert frame[["bench", "system"]].drop_duplicates().shape[0] == 6


def test_several_by_columns_make_a_multiindex():
    df = _frame(n_groups=4)
    many = fit_many(df, by=["split", "bench"], **COUNTS, **FAST)
    assert many.groups == [(0, "b0"), (0, "b2"), (1, "b1"), (1, "b3")]
    assert many.dataset["seed"].sel(split=1, bench="b3").item() == group_seed(0, (1, "b3"))
    assert list(many.to_frame().columns[:3]) == ["split", "bench", "system"]


def test_seed_depends_on_key_not_on_the_other_groups():
    df = _frame(n_groups=3)
    both = fit_many(df, by="bench", **COUNTS, **FAST)
    one = fit_many(df[df["bench"] == "b2"], by="bench", **COUNTS, **FAST)
    np.testing.assert_array_equal(
        one.results("b2").tree["posterior"]["mu"].values,
        both.results("b2").tree["posterior"]["mu"].values,
    )


def test_options_are_split_and_unknown_refused():
    assert split_options({"cluster": "repo", "draws": 10}) == ({"cluster": "repo"}, {"draws": 10})
    with pytest.raises(TypeError, match=r"unknown keyword\(s\) \['drawz'\]"):
        fit_many(_frame(), by="bench", drawz=10)


def test_bad_by_is_refused():
    df = _frame()
    with pytest.raises(ValueError, match=r"columns \['nope'\]"):
        fit_many(df, by="nope", **COUNTS, **FAST)
    df.loc[3, "bench"] = None
    with pytest.raises(ValueError, match=r"missing \(NaN\) in rows \[3\]"):
        fit_many(df, by="bench", **COUNTS, **FAST)


def test_input_frame_is_not_mutated():
    df = _frame()
    before = df.copy()
    fit_many(df, by="bench", **COUNTS, **FAST)
    pd.testing.assert_frame_equal(df, before)


def test_a_failing_group_is_named_and_the_others_kept():
    df = _frame()
    df.loc[df["bench"] == "b1", "successes"] = 9  # more successes than trials
    with pytest.raises(FitManyError, match=r"1 of 3 group\(s\) failed(?s:.)*'b1': ValueError") as e:
        fit_many(df, by="bench", **COUNTS, **FAST)
    assert e.value.partial.groups == ["b0", "b2"]
    many = fit_many(df, by="bench", errors="collect", **COUNTS, **FAST)
    assert many.errors["group"].tolist() == ["b1"]
    assert "successes" in many.errors["message"].item()


def test_keep_summary_drops_trees():
    many = fit_many(_frame(), by="bench", keep="summary", **COUNTS, **FAST)
    assert many.dataset.sizes["group"] == 3
    with pytest.raises(ValueError, match="keep='summary'"):
        many.results("b0")


def test_without_dask_a_client_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ImportError, match=r"bayeval\[dask\]"):
        fit_many(_frame(), by="bench", client="local", **COUNTS, **FAST)
    assert len(fit_many(_frame(n_groups=1), by="bench", **COUNTS, **FAST)) == 1


def test_local_cluster_gives_the_serial_answers_bit_for_bit():
    distributed = pytest.importorskip("distributed")
    df = _frame(n_groups=4)
    serial = fit_many(df, by="bench", seed=3, **COUNTS, **FAST)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        parallel = fit_many(df, by="bench", client=client, seed=3, **COUNTS, **FAST)
    for key in serial.groups:
        a, b = serial.results(key).tree, parallel.results(key).tree
        for group in ("posterior", "posterior_predictive"):
            for name, var in a[group].data_vars.items():
                np.testing.assert_array_equal(var.values, b[group][name].values)
    for name in ("pass_at_1_mean", "pass_at_1_interval", "seed"):
        np.testing.assert_array_equal(serial.dataset[name].values, parallel.dataset[name].values)
