"""The report card: numbers equal the compute functions', renders parse, plots are inline."""

import json
import warnings
from html.parser import HTMLParser

import numpy as np
import pytest

import bayeval as be
from bayeval import report
from bayeval.report import build_report, report_data, write_report
from bayeval.simulate import simulate_benchmark
from bayeval.testing import fake_results

N_BOOT = 500
SEED = 7


class _Page(HTMLParser):
    """Collects the tags of an HTML page (the stdlib parser raises on nothing, so count)."""

    def __init__(self):
        super().__init__()
        self.tags, self.images, self.open = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs).get("src", ""))
        elif tag not in ("meta", "br", "img"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in self.open:
            while self.open.pop() != tag:
                pass


def parse_html(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


@pytest.fixture(scope="module")
def sim():
    return simulate_benchmark(
        n_tasks=40,
        n_trials=4,
        n_systems=3,
        effect=[-0.3, 2.0],
        rates="beta_2_5",
        clusters=5,
        seed=11,
    )


@pytest.fixture(scope="module")
def res(sim):
    return fake_results(sim.data, model="hierarchical", draws=200, chains=2, seed=3)


@pytest.fixture(scope="module")
def out(res):
    return report_data(
        res,
        comparisons=[("system_2", "system_0"), ("system_1", "system_0")],
        k=[1, 3],
        margin=0.02,
        n_boot=N_BOOT,
        seed=SEED,
    )


@pytest.fixture(scope="module")
def bounded():
    frame = be.datasets.frame("terminal_bench")
    data = be.from_frame(frame, trial="trial", cluster="cluster", missing="bounds")
    data = data.sel(system=data.systems[:3])
    return fake_results(data, model="hierarchical", draws=200, chains=2, seed=1)


def _row(rows, **where):
    found = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(found) == 1, where
    return found[0]


def test_metric_rows_are_the_crosscheck(res, out):
    check = be.crosscheck(res, k=[1, 3], n_boot=N_BOOT, seed=SEED)
    for estimand in ("population", "tasks"):
        for system in res.systems:
            for k in (1, 3):
                row = _row(out["metrics"], system=system, metric="pass@k", k=k, estimand=estimand)
                cell = check.sel(estimand=estimand, system=system, k=k)
                assert row["bayes_mean"] == float(cell["bayes_mean"])
                assert row["bayes_lower"] == float(cell["bayes_interval"][0])
                assert row["bootstrap_upper"] == float(cell["bootstrap_interval"][1])
                assert row["bootstrap_unit"] == {"population": "task", "tasks": "trial"}[estimand]
    hat = be.crosscheck(res, k=[3], metric="pass^k", n_boot=N_BOOT, seed=SEED)
    row = _row(out["metrics"], system="system_1", metric="pass^k", k=3, estimand="tasks")
    assert row["bayes_mean"] == float(
        hat.sel(estimand="tasks", system="system_1", k=3)["bayes_mean"]
    )
    # pass^1 is pass@1: not repeated
    assert not [r for r in out["metrics"] if r["metric"] == "pass^k" and r["k"] == 1]
    # the cluster bootstrap sits beside the population rows
    cluster = be.bootstrap.pass_at_k(res.data, k=[1, 3], unit="cluster", n_boot=N_BOOT, seed=SEED)
    row = _row(out["metrics"], system="system_0", metric="pass@k", k=3, estimand="population")
    assert row["cluster_bootstrap_estimate"] == float(
        cluster["estimate"].sel(system="system_0", k=3)
    )


def test_comparison_is_compare_and_noninferiority(res, out):
    entry = out["comparisons"][0]
    cmp = res.compare("system_2", "system_0", k=1, estimand="population", margin=0.02)
    row = entry["bayes"]["rows"][0]
    assert row["effect"] == float(cmp["effect_mean"])
    assert (row["lower"], row["upper"]) == tuple(cmp["effect_interval"].values.tolist())
    assert row["prob_positive"] == float(cmp["prob_positive"])
    assert (
        entry["bayes"]["decision"]["decision"]
        == be.noninferiority(cmp, 0.02, 0.95).attrs["decision"]
    )
    assert entry["bayes"]["decision"]["decision"] == "non-inferior"  # a logit shift of 2
    units = [b["unit"] for b in entry["bootstrap"]]
    assert units == ["task", "cluster"]
    for boot in entry["bootstrap"]:
        twin = be.bootstrap.compare(
            res.data,
            "system_2",
            "system_0",
            k=1,
            unit=boot["unit"],
            n_boot=N_BOOT,
            seed=SEED,
            margin=0.02,
        )
        assert boot["rows"][0]["effect"] == float(twin["effect_mean"])
        assert boot["rows"][0]["lower"] == float(twin["effect_interval"][0])
        assert boot["decision"]["decision"] == be.noninferiority(twin, 0.02, 0.95).attrs["decision"]
        if boot["unit"] == "cluster":
            # 5 clusters: 126 distinct resamples, no tail probability; it does not decide
            assert boot["p_value"] is None and boot["decision"]["decision"] == "inconclusive"
            assert boot["note"].startswith("the cluster bootstrap resamples 5 clusters: 126 ")
            continue
        assert boot["note"] is None
        replicates = twin["effect"].values
        # a replicate at exactly 0 counts for the null on both sides (resampling's rule)
        side = min((replicates >= 0).sum(), (replicates <= 0).sum())
        assert boot["p_value"] == pytest.approx(min(1, 2 * (1 + side) / (N_BOOT + 1)))


def test_multiplicity_is_holm_on_the_twin_p_values(out):
    family = out["multiplicity"]
    assert family["size"] == 2 and family["method"] == "holm"
    assert family["units"] == ["task", "task"]  # the hierarchical population's twin
    p = [c["bootstrap"][0]["p_value"] for c in out["comparisons"]]
    assert family["p_values"] == p
    assert family["adjusted"] == be.adjust_pvalues(p, method="holm").tolist()


def test_power_uses_the_observed_sd_of_paired_differences(sim, out):
    power = out["comparisons"][0]["power"]
    ds = sim.data.dataset
    rates = (ds["successes"] / ds["trials"]).values
    sd = np.std(rates[2] - rates[0], ddof=1)
    assert power["sd"] == pytest.approx(sd, rel=1e-12)
    rows = {(r["effect"], r["alpha"]): r["tasks_needed"] for r in power["rows"]}
    assert rows[(0.02, 0.05)] == be.required_units(sd, 0.02)
    assert rows[(0.02, 0.025)] == be.required_units(sd, 0.02, alpha=0.025)  # family of two
    assert power["effects_from"] == "margin"


def test_units_statuses_and_settings(res, out):
    data = out["data"]
    assert (data["n_systems"], data["n_tasks"], data["clusters"]["count"]) == (3, 40, 5)
    assert data["trials_per_task"] == {"min": 4, "median": 4.0, "max": 4, "used": "valid trials"}
    assert data["status_totals"]["ok"] == 3 * 40 * 4
    icc = be.design_effect(res.data)["icc"].sel(system="system_1")
    assert _row(data["design_effect"], system="system_1")["icc"] == float(icc)
    fit = out["settings"]["fit"]
    assert fit["input_hash"] == res.data.fingerprint() and fit["seed"] == 3
    assert out["settings"]["report"]["seed"] == SEED
    assert out["estimand"]["name"] == "population"
    assert "new task" in out["estimand"]["description"]
    names = [item["name"] for item in out["systematic"]]
    assert names[:4] == [
        "Contamination",
        "Harness and environment drift",
        "Judge and grader bias",
        "Task selection",
    ]
    json.dumps(out, allow_nan=False)


def test_bounds_cross_in_comparisons(bounded):
    a, b, _ = bounded.systems
    out = report_data(bounded, comparisons=[(b, a)], n_boot=N_BOOT, seed=SEED)
    entry = out["comparisons"][0]
    cmp = bounded.compare(b, a, k=1)
    for row in entry["bayes"]["rows"]:
        assert row["effect"] == float(cmp["effect_mean"].sel(missing_bound=row["missing_bound"]))
    assert {r["missing_bound"] for r in out["metrics"]} == {"lower", "upper"}
    assert out["data"]["status_totals"]["no_verdict"] > 0
    assert "Missing outcomes" in out["systematic"][-1]["name"]
    boot = entry["bootstrap"][0]
    assert boot["p_value"] == max(r["p_value"] for r in boot["rows"])
    json.dumps(out, allow_nan=False)


def test_html_is_self_contained_with_plots(res, out):
    pytest.importorskip("matplotlib")
    text = build_report(res, data=out)
    page = parse_html(text)
    assert page.tags.count("h2") >= 9 and "table" in page.tags
    pngs = [src for src in page.images if src.startswith("data:image/png;base64,")]
    assert len(pngs) == len(page.images) >= 5  # forest, pass@k, 2 effects, 2 task rates, ppc
    assert "http" not in "".join(page.images)
    # every number is rendered from the data: the first comparison's interval is there
    row = out["comparisons"][0]["bayes"]["rows"][0]
    assert f"[{row['lower']:.3f}, {row['upper']:.3f}]" in text
    assert out["settings"]["fit"]["input_hash"] in text
    assert "Holm" in text or "holm" in text


def test_diagnostics_table_names_the_parameter_of_each_worst_value(monkeypatch, res, out):
    """An MCMC fit's worst values come with the parameter that has them (Results.diagnostics'
    ``*_parameter`` keys): a column of the table in both formats, kept out of the numbers."""
    diag = {
        "max_rhat": 1.072,
        "min_ess_bulk": 78.7,
        "min_ess_tail": 51.1,
        "max_rhat_parameter": "sigma_task_system",
        "min_ess_bulk_parameter": "phi[B]",
        "min_ess_tail_parameter": "phi[B]",
        "divergences": 0,
        "min_bfmi": 0.27,
    }
    monkeypatch.setattr(type(res), "diagnostics", property(lambda self: diag))
    section = report._diagnostics_section(res)
    assert section["mcmc"] == {k: v for k, v in diag.items() if "parameter" not in k}
    assert section["parameter"] == {
        "max_rhat": "sigma_task_system",
        "min_ess_bulk": "phi[B]",
        "min_ess_tail": "phi[B]",
    }
    data = {**out, "diagnostics": section}
    markdown = build_report(res, fmt="markdown", plots=False, data=data)
    assert "| max_rhat | 1.072 | `sigma_task_system` |" in markdown
    # an ESS is a count of draws: printed whole; BFMI to two decimals
    assert "| min_ess_bulk | 79 | `phi[B]` |" in markdown
    assert "| divergences | 0 |  |" in markdown
    assert "| min_bfmi | 0.27 |  |" in markdown
    html = build_report(res, plots=False, data=data)
    assert '<th>min_ess_tail</th><td class="n">51</td><td>phi[B]</td>' in html


def test_markdown_file_gets_its_plots_beside_it(tmp_path, bounded):
    pytest.importorskip("matplotlib")
    a, b, _ = bounded.systems
    path = write_report(bounded, tmp_path / "card.md", comparisons=[(b, a)], n_boot=N_BOOT)
    text = path.read_text()
    folder = tmp_path / "card_files"
    pngs = sorted(p.name for p in folder.iterdir())
    assert {"forest.png", "effect_0.png", "status.png", "ppc.png"} <= set(pngs)
    for name in pngs:
        assert f"](card_files/{name})" in text
    assert "| system | metric | bound |" in text
    assert "data:image" not in text


def test_without_matplotlib_every_number_stays(monkeypatch, res, out):
    monkeypatch.setattr(report.figures, "_matplotlib_available", lambda: False)
    text = build_report(res, data=out, fmt="markdown")
    assert "pip install 'bayeval[plots]'" in text.split("## What is estimated")[0]
    assert "![" not in text
    row = out["metrics"][0]
    assert f"{row['bayes_mean']:.3f} [{row['bayes_lower']:.3f}, {row['bayes_upper']:.3f}]" in text


def test_a_broken_plot_becomes_a_note(monkeypatch, res):
    pytest.importorskip("matplotlib")
    from bayeval import plots

    def broken(*args, **kwargs):
        raise RuntimeError("no canvas")

    for name in ("plot_forest", "plot_pass_at_k", "plot_effect", "plot_task_rates"):
        monkeypatch.setattr(plots, name, broken)
    text = build_report(res, fmt="html", n_boot=N_BOOT)
    assert "could not be drawn: RuntimeError: no canvas" in text
    assert len(parse_html(text).images) == 1  # the posterior predictive check


def test_caveats_become_notes_not_warnings():
    data = be.from_counts(
        [[1, 0, 1, 1, 0, 1, 0, 1], [1, 1, 1, 1, 0, 1, 0, 1]], trials=1, systems=["A", "B"]
    )
    res = fake_results(data, model="hierarchical", draws=200, chains=2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = report_data(res, comparisons=[("B", "A")], n_boot=N_BOOT, notes=["read note"])
    assert out["notes"][0] == "read note"
    assert any("trial bootstrap has zero width" in note for note in out["notes"])


def test_bad_arguments_name_what_is_wrong(res, out, tmp_path):
    with pytest.raises(ValueError, match="candidate 'nope' is not a system"):
        report_data(res, comparisons=[("nope", "system_0")])
    with pytest.raises(ValueError, match="must be a .candidate, baseline. pair"):
        report_data(res, comparisons=["system_1"])
    with pytest.raises(ValueError, match="margin must be a non-negative number"):
        report_data(res, margin=-0.1)
    with pytest.raises(ValueError, match="estimand must be one of"):
        report_data(res, estimand="everything")
    with pytest.raises(TypeError, match="results must be a bayeval Results"):
        report_data(res.data)
    with pytest.raises(ValueError, match=r"must end in one of \['.html'"):
        write_report(res, tmp_path / "card.pdf", data=out)
    with pytest.raises(TypeError, match="not both"):
        build_report(res, data=out, margin=0.1)
    with pytest.raises(ValueError, match="fmt must be one of"):
        build_report(res, data=out, fmt="pdf")


def test_results_table_is_ordered_by_the_measured_rate():
    """Rows follow each system's measured pass@1, best first, whatever the input's order."""
    from bayeval.report import _measured_order

    data = be.from_counts(
        [[2, 3, 1], [9, 8, 9], [5, 6, 4]], trials=10, systems=["low", "high", "mid"]
    )
    res = fake_results(data, model="hierarchical", draws=50, chains=2, seed=0)
    assert _measured_order(res) == {"high": 0, "mid": 1, "low": 2}


@pytest.fixture(scope="module")
def platforms():
    """LiveCodeBench's 3 platforms (codeforces' 9 problems whole), two systems, a fake fit."""
    frame = be.datasets.frame("livecodebench")
    data = be.from_frame(frame, successes="n_correct", trials="n_samples", cluster="cluster")
    platform = data.dataset["cluster"].values
    keep = np.r_[
        np.flatnonzero(platform == "atcoder")[:20],
        np.flatnonzero(platform == "leetcode")[:20],
        np.flatnonzero(platform == "codeforces"),
    ]
    pair = ["GPT-4-Turbo-2024-04-09", "Claude-3-Opus"]
    data = data.sel(system=pair, task=data.tasks[keep].tolist())
    return fake_results(data, model="logit_normal", draws=100, chains=2, seed=0), pair


def test_few_clusters_default_to_these_clusters_and_say_so(platforms):
    res, pair = platforms
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        out = report_data(res, comparisons=[pair], n_boot=N_BOOT, seed=SEED)
    words = "a new task from these 3 clusters, weighted by their tasks"
    estimand = out["estimand"]
    assert (estimand["clusters"], estimand["weighting"]) == ("observed", "task")
    assert estimand["words"] == {"population": words, "tasks": "these 49 tasks"}
    assert estimand["description"].startswith(words)
    assert any(n.startswith("population estimand: 3 clusters are too few") for n in out["notes"])
    entry = out["comparisons"][0]
    assert (entry["estimand_words"], entry["clusters"], entry["weighting"]) == (
        words,
        "observed",
        "task",
    )
    # the posterior's population is the one named, and so is its twin
    cmp = res.compare(*pair, estimand="population", clusters="observed", weighting="task")
    assert entry["bayes"]["rows"][0]["effect"] == float(cmp["effect_mean"])
    twin, cluster = entry["bootstrap"]
    assert twin["twin"] and twin["meaning"] == f"tasks resampled within their clusters ({words})"
    assert twin["p_value"] is not None and twin["note"] is None
    # three platforms: the cluster bootstrap does not decide, and the family holds the twin
    assert cluster["unit"] == "cluster" and cluster["p_value"] is None
    assert cluster["note"].startswith("the cluster bootstrap resamples 3 clusters: 10 distinct")
    assert cluster["decision"]["decision"] == "inconclusive"
    assert out["multiplicity"]["p_values"] == [twin["p_value"]]
    rows = [r for r in out["metrics"] if r["estimand"] == "population"]
    check = be.crosscheck(res, n_boot=N_BOOT, seed=SEED, clusters="observed")
    for row in rows:
        cell = check.sel(estimand="population", system=row["system"])
        assert row["bayes_mean"] == float(cell["bayes_mean"])
        assert row["bootstrap_lower"] == float(cell["bootstrap_interval"][0])
    text = build_report(res, data=out, fmt="markdown", plots=False)
    assert f"(population estimand: {words})" in text and cluster["note"] in text


def test_a_new_cluster_is_there_when_asked_for(platforms):
    res, pair = platforms
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        out = report_data(res, comparisons=[pair], n_boot=N_BOOT, seed=SEED, clusters="new")
    words = "a new task from a new cluster, each cluster weighing the same"
    assert out["estimand"]["words"]["population"] == words
    assert out["estimand"]["clusters_note"] is None
    assert not any(n.startswith("population estimand:") for n in out["notes"])
    entry = out["comparisons"][0]
    assert entry["estimand_words"] == words and entry["clusters"] == "new"
    twin = entry["bootstrap"][0]
    assert twin["twin"] and twin["unit"] == "cluster" and twin["weighting"] == "cluster"
    assert twin["decision"]["decision"] == "inconclusive" and twin["p_value"] is None
    assert out["multiplicity"]["adjusted"] == [None]
    with pytest.raises(ValueError, match="clusters= and weighting= need a paired model"):
        report_data(fake_results(res.data, model="hierarchical"), clusters="new")
