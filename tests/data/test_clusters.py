"""The default population of a task set's clusters, read off the bundled benchmarks' files."""

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval.data.clusters import (
    MIN_CLUSTERS,
    SMALL_CLUSTER_SHARE,
    default_clusters,
    estimand_words,
)
from tests.helpers import ROOT

DATA = ROOT / "data"


def _sizes(file: str) -> pd.Series:
    """Tasks per cluster, counted from the CSV itself (not through bayeval)."""
    frame = pd.read_csv(DATA / file)
    return frame.drop_duplicates("task").groupby("cluster").size().sort_values()


def test_livecodebench_has_too_few_platforms_for_a_new_one():
    sizes = _sizes("livecodebench_codegen_2024-04-17.csv")
    assert len(sizes) == 3 < MIN_CLUSTERS  # atcoder, leetcode, codeforces
    choice = default_clusters(be.datasets.load("livecodebench"))
    assert (choice.clusters, choice.weighting) == ("observed", "task")
    assert (choice.n_clusters, choice.n_tasks) == (3, int(sizes.sum()))
    assert (choice.smallest, choice.smallest_tasks) == ("codeforces", int(sizes["codeforces"]))
    assert "3 clusters are too few" in choice.note and "--clusters new" in choice.note


def test_swebench_small_repositories_keep_the_default_on_these_repositories():
    sizes = _sizes("swebench_verified_mini_swe_agent.csv")
    assert len(sizes) == 12 >= MIN_CLUSTERS  # enough clusters: their sizes decide
    small = sizes[sizes < SMALL_CLUSTER_SHARE * sizes.sum() / len(sizes)]
    # pallets/flask (1 task), mwaskom/seaborn (2), psf/requests (8), pylint-dev/pylint (10)
    assert small.to_dict() == {
        "pallets/flask": 1,
        "mwaskom/seaborn": 2,
        "psf/requests": 8,
        "pylint-dev/pylint": 10,
    }
    choice = default_clusters(be.datasets.load("swebench_verified"))
    assert (choice.clusters, choice.weighting) == ("observed", "task")
    assert (choice.smallest, choice.smallest_tasks) == ("pallets/flask", 1)
    assert choice.note.startswith("4 of the 12 clusters hold fewer than 25%")


def test_terminal_bench_families_support_a_new_family():
    sizes = _sizes("terminal_bench_core_0.1.1.csv")
    assert len(sizes) == 70 and sizes.min() >= SMALL_CLUSTER_SHARE * sizes.sum() / len(sizes)
    choice = default_clusters(be.datasets.load("terminal_bench", missing="fail"))
    assert (choice.clusters, choice.weighting, choice.n_clusters) == ("new", "cluster", 70)


@pytest.mark.parametrize(
    "sizes, expected",
    [
        ([5] * MIN_CLUSTERS, "new"),  # ten equal clusters
        ([5] * (MIN_CLUSTERS - 1), "observed"),  # nine
        ([8] * 9 + [2], "new"),  # 2 of 74 tasks: 2 >= 0.25 * 7.4
        ([8] * 9 + [1], "observed"),  # 1 of 73 tasks: 1 < 0.25 * 7.3
    ],
)
def test_the_rule_at_its_edges(sizes, expected):
    labels = np.repeat([f"c{i}" for i in range(len(sizes))], sizes)
    data = be.from_counts(np.ones(len(labels), int), 1, clusters=labels.tolist())
    assert default_clusters(data).clusters == expected
    assert default_clusters(data.dataset).clusters == expected  # a fit's observed data


def test_no_clusters_one_population():
    choice = default_clusters(be.datasets.load("langchain_tool_use"))
    assert (choice.clusters, choice.n_clusters, choice.n_tasks) == ("observed", 0, 20)


def test_the_words_name_estimand_clusters_and_weighting():
    words = {
        (estimand, clusters, weighting): estimand_words(
            estimand, clusters=clusters, weighting=weighting, n_tasks=400, n_clusters=3
        )
        for estimand, clusters, weighting in [
            ("tasks", None, "task"),
            ("population", None, "task"),
            ("population", "new", "cluster"),
            ("population", "observed", "task"),
            ("population", "observed", "cluster"),
        ]
    }
    assert words[("tasks", None, "task")] == "these 400 tasks"
    assert words[("population", None, "task")] == (
        "a new task like these 400 (the 3 clusters not modelled)"
    )
    assert words[("population", "new", "cluster")] == (
        "a new task from a new cluster, each cluster weighing the same"
    )
    assert words[("population", "observed", "task")] == (
        "a new task from these 3 clusters, weighted by their tasks"
    )
    assert words[("population", "observed", "cluster")].endswith("each weighing the same")
    assert estimand_words("population", n_tasks=20) == "a new task like these 20"
