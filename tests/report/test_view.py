"""What the rendered card shows: sections that say something, one order of systems, each fit's
diagnostics (bayeval.report._view and the templates)."""

import re

import numpy as np
import pytest

from bayeval.report import _measured_order, build_report, report_data
from bayeval.report._view import _view
from bayeval.testing import fake_results


def _posterior_order(res, k=1):
    """Systems best first by the posterior mean of pass@k (bounds' midpoint), from the draws."""
    mean = res.pass_at_k(k=k, estimand="population").mean(["chain", "draw"])
    if "missing_bound" in mean.dims:
        mean = mean.mean("missing_bound")
    values = dict(zip(mean["system"].values.tolist(), mean.values.tolist(), strict=True))
    return sorted(values, key=lambda s: -values[s])


def _systems_in(rows):
    return list(dict.fromkeys(str(r["system"]) for r in rows))


# -- one order ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["card13", "card41"])
def test_every_list_of_systems_follows_the_posterior_mean(name, request):
    res, card = request.getfixturevalue(name)
    order = card["order"]["systems"]
    assert order == _posterior_order(res)
    if name == "card13":  # under bounds the measured pass@1 (the lower bound's) differs
        measured = _measured_order(res)
        assert order != sorted(map(str, measured), key=lambda s: measured[s])
    assert "posterior mean of pass@1 (population estimand)" in card["order"]["by"]
    for rows in (card["metrics"], card["data"]["status_counts"], card["diagnostics"]["ppc"]):
        assert _systems_in(rows) == order
    if card["data"]["design_effect"]:
        assert _systems_in(card["data"]["design_effect"]) == order
    view = _view(card)
    assert _systems_in(view["status"]["rows"]) == [
        s for s in order if s in _systems_in(view["status"]["rows"])
    ]
    if card.get("ranks"):
        # the ranks' own order (their posterior mean) is the report's
        assert _systems_in(view["ranks"]) == order
        assert _systems_in(card["ranks"]["systems"]) == order


# -- sections that say something ---------------------------------------------------------------
def test_no_table_of_zeros_when_every_attempt_has_an_outcome(card41):
    _, card = card41
    assert card["data"]["status_totals"]["ok"] == card["data"]["planned_attempts"]
    view = _view(card)
    assert view["status"]["table"] is False
    html = build_report(card41[0], data=card, plots=False)
    section = html.split("<h2>Outcomes, coverage and missing data</h2>")[1].split("<h2>")[0]
    assert "<table" not in section


def test_the_status_table_lists_only_what_occurs(card13):
    res, card = card13
    counts = res.data.status_counts
    view = _view(card)["status"]
    occurring = [s for s in counts.columns if s != "ok" and counts[s].sum() > 0]
    assert view["columns"] == ["ok", *occurring]
    missing = counts.index[counts.drop(columns="ok").sum(axis=1) > 0].astype(str).tolist()
    assert sorted(_systems_in(view["rows"])) == sorted(missing)
    assert view["complete"] == len(counts) - len(missing)


def test_one_trial_rows_have_no_zero_width_trial_bootstrap(card41):
    res, card = card41
    tasks_rows = [r for r in card["metrics"] if r["estimand"] == "tasks"]
    assert len(tasks_rows) == 41
    for row in tasks_rows:
        assert row["bootstrap_unit"] == "trial"
        assert row["bootstrap_lower"] is None and row["bootstrap_upper"] is None
        assert "one trial per task" in row["bootstrap_note"]
    for row in (r for r in card["metrics"] if r["estimand"] == "population"):
        assert row["bootstrap_upper"] > row["bootstrap_lower"]  # the task bootstrap has width
    html = build_report(res, data=card, plots=False)
    # no interval of no width anywhere on the card
    for low, high in re.findall(r"\[(\d\.\d{3}), (\d\.\d{3})\]", html):
        assert low != high
    assert "No bootstrap twin here: one trial per task" in html


def test_a_check_without_p_values_is_a_sentence_not_rows_of_na(card41):
    res, card = card41
    assert all(r["p_value"] is None for r in card["diagnostics"]["ppc"])
    assert _view(card)["ppc"]["rows"] == []
    html = build_report(res, data=card, plots=False)
    section = html.split("<h2>Fit diagnostics</h2>")[1].split("<h2>")[0]
    assert "nothing to check" in section and "<table" not in section and "n/a" not in section


def test_a_long_check_without_a_flag_is_summed_up_and_folded(card13):
    res, card = card13
    view = _view(card)["ppc"]
    rows = card["diagnostics"]["ppc"]
    assert view["fold"] and len(view["rows"]) == len(rows) == 26
    smallest = min(rows, key=lambda r: r["p_value"])
    assert view["smallest"] is smallest
    html = build_report(res, data=card, plots=False)
    section = html.split("<h2>Fit diagnostics</h2>")[1].split("<h2>")[0]
    if not any(r["flagged"] for r in rows):
        assert "No system is flagged; the smallest p-value is" in section
    assert "<details><summary>Every system's check (26 rows)</summary>" in section


def test_long_results_tables_keep_the_headline_open(card13):
    _, card = card13
    tables = _view(card)["metrics"]
    first = tables[0]
    assert first["estimand"] == "population" and not first["fold"]
    assert first["metrics"] == [("pass@k", 1)] and len(first["rows"]) == 26  # 13 x 2 bounds
    assert [t["fold"] for t in tables[1:]] == [True, True]
    assert sum(len(t["rows"]) for t in tables) == len(card["metrics"])


def test_a_short_card_shows_each_estimand_in_one_open_table(card2):
    _, card = card2
    tables = _view(card)["metrics"]
    assert [(t["estimand"], t["fold"]) for t in tables] == [
        ("population", False),
        ("tasks", False),
    ]
    # each table names its estimand in the words every output uses (the hierarchical model
    # does not model the clusters)
    res, _ = card2
    n_tasks = len(res.data.tasks)
    n_clusters = len(set(res.data.dataset["cluster"].values.tolist()))
    assert [t["words"] for t in tables] == [
        f"a new task like these {n_tasks} (the {n_clusters} clusters not modelled)",
        f"these {n_tasks} tasks",
    ]


# -- each fit's diagnostics --------------------------------------------------------------------
def test_the_comparisons_fit_has_its_own_diagnostics_and_whole_ess(swebench):
    """A grid fit for the table and a sampled fit for the comparison (as in ``bayeval demo``):
    the card no longer says no MCMC was run, and an ESS is a whole number."""
    pair = swebench.sel(system=list(swebench.systems[:2]))
    table = fake_results(swebench, model="hierarchical", draws=100, chains=2, seed=0)
    paired = fake_results(pair, model="logit_normal", draws=100, chains=2, seed=0)
    card = report_data(table, comparisons=[tuple(pair.systems)], compare_results=paired, n_boot=100)
    assert card["diagnostics"]["mcmc"] == {}
    mcmc = card["comparison_fit"]["diagnostics"]["mcmc"]
    assert mcmc
    html = build_report(table, data=card, plots=False)
    section = html.split("<h2>Fit diagnostics</h2>")[1].split("<h2>")[0]
    assert "<h3>The per-system table: <code>hierarchical</code></h3>" in section
    assert "<h3>The comparisons: <code>logit_normal</code>" in section
    ess = f"{mcmc['min_ess_bulk']:.0f}"
    assert f'<th>min_ess_bulk</th><td class="n">{ess}</td>' in section
    assert f"bulk ESS at least {ess})" in html.split("<h2>")[0]
    markdown = build_report(table, data=card, plots=False, fmt="markdown")
    assert f"| min_ess_bulk | {ess} |" in markdown
    assert not re.search(r"min_ess_bulk \| \d+\.\d", markdown)
    assert np.isfinite(mcmc["max_rhat"])
