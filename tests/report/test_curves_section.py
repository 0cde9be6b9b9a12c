"""The effect-over-k section: the bootstrap beside the curve is the comparison's own
(bayeval.report.curves_section and its figure)."""

import json
from importlib import resources

import jsonschema
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import bayeval as be  # noqa: E402
from bayeval.analyses.crosscheck import bootstrap_twin  # noqa: E402
from bayeval.data.clusters import estimand_words  # noqa: E402
from bayeval.report import build_report, curves_section, report_data  # noqa: E402
from bayeval.report.figures import _plot_specs  # noqa: E402
from bayeval.testing import fake_results  # noqa: E402

SWE_AGENT = "20250825_swe-agent-mini_claude-4-sonnet"  # 150 of its 400 outcomes missing
OPENHANDS = "20250711_openhands_claude-4-sonnet"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def clustered():
    """The paired model on Terminal-Bench's families, missing outcomes left out: the
    comparison's twin resamples families, each weighing the same, and tasks keep 0 to 5
    valid trials."""
    data = be.datasets.load("terminal_bench", missing="exclude").sel(system=[OPENHANDS, SWE_AGENT])
    res = fake_results(data, model="logit_normal", draws=200, chains=2, seed=3)
    card = report_data(res, comparisons=[(OPENHANDS, SWE_AGENT)], n_boot=300)
    card["curves"] = curves_section(
        res,
        [(OPENHANDS, SWE_AGENT)],
        k=[1, 2, 5],
        metric="pass@k",
        estimand="population",
        ci_prob=0.95,
        n_boot=300,
        seed=0,
    )
    return data, res, card


def test_the_k1_point_is_the_comparisons_twin_bootstrap(clustered):
    data, _, card = clustered
    twin = next(b for b in card["comparisons"][0]["bootstrap"] if b["twin"])
    assert (twin["unit"], twin["weighting"]) == ("cluster", "cluster")
    curves = card["curves"]
    assert (curves["unit"], curves["weighting"]) == ("cluster", "cluster")
    (row,) = curves["rows"]
    first = row["points"][0]
    assert first["k"] == 1
    assert first["bootstrap_estimate"] == pytest.approx(twin["rows"][0]["effect"])
    # every shared task at k = 1; fewer at k = 5 (trials lost to missing outcomes)
    n = data.dataset["trials"].values
    assert [p["bootstrap_n_tasks"] for p in row["points"]] == [
        int((n >= k).all(axis=0).sum()) for k in (1, 2, 5)
    ]
    assert row["points"][-1]["bootstrap_n_tasks"] < first["bootstrap_n_tasks"]


def test_every_band_contains_its_pointwise_interval(clustered, card13):
    for card in (clustered[2], card13[1]):
        for row in card["curves"]["rows"]:
            for p in row["points"]:
                assert p["band_lower"] <= p["bayes_lower"] <= p["bayes_upper"] <= p["band_upper"]
                assert (
                    p["bootstrap_band_lower"]
                    <= p["bootstrap_lower"]
                    <= p["bootstrap_upper"]
                    <= p["bootstrap_band_upper"]
                )


def test_text_caption_and_legend_name_the_same_bootstrap(clustered):
    _, res, card = clustered
    design = card["curves"]["bootstrap"]
    assert design == "paired cluster bootstrap, each cluster weighing the same"
    specs, _ = _plot_specs(res, card)
    (name, _title, caption, draw) = next(s for s in specs if s[0] == "curve_0")
    assert design in caption
    _fig, ax = draw()
    labels = ax.get_legend_handles_labels()[1]
    assert "cluster bootstrap (clusters alike) estimate" in labels
    assert not any("task bootstrap" in label for label in labels)
    html = build_report(res, data=card, plots=False)
    assert f"beside the {design} (300 replicates)" in html


def test_under_missing_bounds_the_section_has_each_crossed_bound(card13):
    res, card = card13
    rows = card["curves"]["rows"]
    assert [r["missing_bound"] for r in rows] == ["lower", "upper"]
    a, b = rows[0]["candidate"], rows[0]["baseline"]
    cmp = res.compare(a, b, k=[1, 5])
    for row in rows:
        want = cmp["effect_mean"].sel(missing_bound=row["missing_bound"]).values
        got = [p["bayes_mean"] for p in row["points"]]
        assert got == pytest.approx(want.tolist())
    schema = json.loads(
        resources.files("bayeval.report").joinpath("schemas/report.schema.json").read_text()
    )
    jsonschema.validate(json.loads(json.dumps(card)), schema)
    html = build_report(res, data=card, plots=False)
    assert f"{a} &minus; {b} (lower bound)" in html and f"{a} &minus; {b} (upper bound)" in html


@pytest.fixture(scope="module")
def few_clusters():
    """Three clusters of unequal size, too few for a new cluster: the default population is
    a new task from these clusters, weighted by their tasks."""
    rng = np.random.default_rng(4)
    clusters = ["x"] * 3 + ["y"] * 4 + ["z"] * 5
    counts = rng.integers(0, 9, size=(2, len(clusters)))
    data = be.from_counts(counts, trials=8, systems=["A", "B"], clusters=clusters)
    res = fake_results(data, model="logit_normal", draws=200, chains=2, seed=1)
    return data, res


@pytest.mark.parametrize(
    ("clusters", "unit", "weighting", "design", "legend"),
    [
        (
            None,
            "task",
            "task",
            "paired task bootstrap within the observed clusters, clusters weighted by their tasks",
            "task bootstrap (within clusters) estimate",
        ),
        (
            "new",
            "cluster",
            "cluster",
            "paired cluster bootstrap, each cluster weighing the same",
            "cluster bootstrap (clusters alike) estimate",
        ),
    ],
)
def test_the_curve_resamples_as_the_comparisons_twin_under_the_default_population(
    few_clusters, clusters, unit, weighting, design, legend
):
    data, res = few_clusters
    options = {} if clusters is None else {"clusters": clusters}
    twin = bootstrap_twin(res, "population", **options).attrs
    assert twin["unit"] == unit and twin.get("weighting", "task") == weighting
    section = curves_section(
        res,
        [("A", "B")],
        k=[1, 2, 4],
        metric="pass@k",
        estimand="population",
        ci_prob=0.95,
        n_boot=300,
        seed=0,
        **options,
    )
    assert (section["unit"], section["weighting"]) == (unit, weighting)
    assert section["clusters"] == twin.get("clusters")
    assert section["bootstrap"] == design
    # the k = 1 point is the comparison's bootstrap at the twin's settings
    single = be.bootstrap.compare(data, "A", "B", k=1, n_boot=300, **twin)
    point = section["rows"][0]["points"][0]
    assert point["bootstrap_estimate"] == pytest.approx(float(single["effect_mean"]))
    # the posterior curve is the comparison's, at the same population
    cmp = res.compare("A", "B", k=[1, 2, 4], **options)
    assert [p["bayes_mean"] for p in section["rows"][0]["points"]] == pytest.approx(
        cmp["effect_mean"].values.tolist()
    )
    words = estimand_words(
        "population",
        clusters=clusters or "observed",
        weighting=weighting,
        n_tasks=12,
        n_clusters=3,
    )
    assert section["estimand_words"] == words
    card = report_data(res, comparisons=[("A", "B")], n_boot=300, **options)
    card["curves"] = section
    specs, _ = _plot_specs(res, card)
    (_name, _title, caption, draw) = next(s for s in specs if s[0] == "curve_0")
    assert design in caption
    _fig, ax = draw()
    labels = ax.get_legend_handles_labels()[1]
    assert legend in labels
    html = build_report(res, data=card, plots=False)
    assert f"population estimand: {words}" in html
    assert f"beside the {design} (300 replicates)" in html
