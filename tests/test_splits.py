"""split_tasks: fractions, whole clusters, reproducibility and refusals."""

import json

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval.splits import split_tasks


def record(part):
    return json.loads(part.dataset.attrs["split"])


def clustered(sizes, seed=0):
    rng = np.random.default_rng(seed)
    clusters = np.concatenate([[f"g{i}"] * s for i, s in enumerate(sizes)])
    successes = rng.binomial(4, 0.5, size=(2, len(clusters)))
    return be.from_counts(
        successes,
        trials=4,
        systems=["A", "B"],
        clusters=clusters,
        tasks=[f"t{i}" for i in range(len(clusters))],
    )


def test_swebench_halves_keep_repositories_whole(swebench):
    parts = split_tasks(swebench, seed=3)
    assert list(parts) == ["validation", "test"]
    cluster = swebench.dataset["cluster"].to_series()
    seen = [set(cluster[part.tasks].tolist()) for part in parts.values()]
    assert not seen[0] & seen[1] and seen[0] | seen[1] == set(cluster.tolist())
    tasks = [set(part.tasks.tolist()) for part in parts.values()]
    assert not tasks[0] & tasks[1] and len(tasks[0] | tasks[1]) == 500
    largest = cluster.value_counts().max()  # django: 231 of 500
    for part in parts.values():
        assert abs(len(part.tasks) - 250) <= largest
        rec = record(part)
        assert rec["n_tasks"] == len(part.tasks)
        assert rec["n_clusters"] == len(set(cluster[part.tasks]))
        assert rec["seed"] == 3 and rec["fractions"] == [0.5, 0.5] and rec["by"] == "cluster"
        assert rec["n_tasks_total"] == 500 and rec["n_clusters_total"] == 12
        assert part.systems == swebench.systems


@pytest.mark.parametrize("fractions", [(0.5, 0.5), (0.7, 0.3), (0.2, 0.3, 0.5), (0.1, 0.1, 0.8)])
@pytest.mark.parametrize("seed", range(8))
def test_realised_fractions_within_one_cluster(fractions, seed):
    sizes = np.random.default_rng(seed).integers(1, 9, size=25)
    data = clustered(sizes, seed)
    names = [f"p{i}" for i in range(len(fractions))]
    parts = split_tasks(data, fractions=fractions, seed=seed, names=names)
    total = int(sizes.sum())
    assert sum(len(p.tasks) for p in parts.values()) == total
    for f, part in zip(fractions, parts.values(), strict=True):
        assert abs(len(part.tasks) - f * total) <= sizes.max()
        assert record(part)["fraction"] == pytest.approx(len(part.tasks) / total)


def test_by_task_is_within_one_task():
    data = be.from_counts(np.ones((1, 81), dtype=int), trials=1)
    for by in ("task", None):
        parts = split_tasks(data, fractions=(0.7, 0.3), by=by, seed=1)
        assert [len(p.tasks) for p in parts.values()] in ([57, 24], [56, 25])
        assert record(parts["test"])["n_clusters"] is None


def test_reproducible_and_seed_dependent():
    data = clustered([3] * 30)
    first = split_tasks(data, seed=5)
    again = split_tasks(data, seed=5)
    other = split_tasks(data, seed=6)
    assert first["test"].tasks.tolist() == again["test"].tasks.tolist()
    assert first["test"].tasks.tolist() != other["test"].tasks.tolist()


def test_independent_of_row_order():
    df = be.datasets.frame("swebench_verified")
    shuffled = df.sample(frac=1.0, random_state=0)
    a = split_tasks(be.from_frame(df, cluster="cluster"), seed=2)
    b = split_tasks(be.from_frame(shuffled, cluster="cluster"), seed=2)
    assert sorted(a["test"].tasks) == sorted(b["test"].tasks)


def test_every_cluster_lands_on_either_side_across_seeds():
    data = clustered([4] * 10)
    sides = {split: set() for split in ("validation", "test")}
    for seed in range(20):
        parts = split_tasks(data, seed=seed)
        for name, part in parts.items():
            sides[name] |= set(part.dataset["cluster"].values.tolist())
    assert sides["validation"] == sides["test"] == {f"g{i}" for i in range(10)}


def test_strata_weights_follow_the_part():
    data = be.datasets.load("livecodebench")
    parts = split_tasks(data, seed=0)
    for part in parts.values():
        weights = part.stratum_weights
        assert sum(weights.values()) == pytest.approx(1.0)


def test_does_not_mutate(swebench):
    before = swebench.dataset.copy(deep=True)
    split_tasks(swebench, seed=0)
    assert swebench.dataset.identical(before)
    assert "split" not in swebench.dataset.attrs


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"fractions": (0.6, 0.6)}, ValueError, "must sum to 1"),
        ({"fractions": (1.0,)}, ValueError, "at least two parts"),
        ({"fractions": (1.2, -0.2)}, ValueError, "positive numbers"),
        ({"fractions": (0.5, float("nan"))}, ValueError, "positive numbers"),
        ({"fractions": 0.5}, TypeError, "sequence of numbers"),
        ({"by": "repo"}, ValueError, "by must be one of"),
        ({"names": ("a",)}, ValueError, "2 distinct non-empty strings"),
        ({"names": ("a", "a")}, ValueError, "2 distinct non-empty strings"),
        ({"seed": -1}, TypeError, "seed must be"),
    ],
)
def test_bad_arguments(swebench, kwargs, error, match):
    with pytest.raises(error, match=match):
        split_tasks(swebench, **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match="needs task clusters"):
        split_tasks(be.from_counts([1, 0, 1, 1], trials=1))
    with pytest.raises(ValueError, match="at least 3 clusters; this data has 2"):
        split_tasks(clustered([3, 3]), fractions=(0.2, 0.3, 0.5), names=list("abc"))
    with pytest.raises(ValueError, match="got no task"):
        split_tasks(clustered([20, 1, 1]), fractions=(0.9, 0.05, 0.05), names=list("abc"))
    with pytest.raises(TypeError, match="data must be an EvalData"):
        split_tasks(pd.DataFrame({"task": [1, 2]}))
