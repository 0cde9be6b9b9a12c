"""The report's decisions: one statement in JSON, Markdown and HTML; a failed fit flagged."""

import html
import json
import re

import pytest

import bayeval as be
from bayeval.report import build_report, curves_section, report_data
from bayeval.report._format import _md_text, _signed
from bayeval.testing import fake_results

FAILING = {"divergences": 45, "max_rhat": 1.016, "max_rhat_parameter": "sigma_system"}


@pytest.fixture(scope="module")
def tau_pair():
    """Two systems of the LiveCodeBench file, as the report would compare them."""
    data = be.datasets.load("livecodebench")
    systems = data.systems[:2]
    return fake_results(data.sel(system=systems), model="hierarchical", seed=1), systems


def _failing(res):
    tree = res.tree
    tree.attrs["diagnostics"] = json.dumps({**res.diagnostics, **FAILING})
    return type(res)(tree)


def _statements(card):
    (entry,) = card["comparisons"]
    return [entry["bayes"]["decision"]["statement"]] + [
        b["decision"]["statement"] for b in entry["bootstrap"]
    ]


def test_every_format_prints_the_statement_of_each_decision(tau_pair):
    res, (a, b) = tau_pair
    card = report_data(res, comparisons=[(b, a)], margin=0.02, n_boot=500)
    (entry,) = card["comparisons"]
    decision = entry["bayes"]["decision"]
    cmp = res.compare(b, a, margin=0.02)
    assert decision["statement"] == be.noninferiority(cmp, prob=0.95).attrs["statement"]
    assert decision["lower"] == pytest.approx(float(be.noninferiority(cmp)["lower"]))
    assert card["diagnostics"]["gates_passed"] and card["diagnostics"]["gates_note"] is None
    markdown = build_report(res, fmt="markdown", plots=False, data=card)
    page = html.unescape(build_report(res, fmt="html", plots=False, data=card))
    for statement in _statements(card):
        assert _md_text(statement) in markdown
        assert statement in page
    assert "failed its MCMC gates" not in markdown + page


def test_a_fit_that_failed_its_gates_is_flagged_in_every_format(tau_pair):
    res, (a, b) = tau_pair
    bad = _failing(res)
    card = report_data(bad, comparisons=[(b, a)], margin=0.02, n_boot=500)
    diagnostics = card["diagnostics"]
    assert diagnostics["gates_passed"] is False
    assert diagnostics["gates_failed"] == ["divergences", "max_rhat"]
    assert diagnostics["gates_note"].startswith(
        "45 divergent transitions; r-hat up to 1.016 in sigma_system (gate 1.01). Increase"
    )
    (entry,) = card["comparisons"]
    assert entry["bayes"]["gates_failed"] == ["divergences", "max_rhat"]
    assert entry["bayes"]["decision"]["decision"] == "undecided"
    assert all(b["decision"]["decision"] != "undecided" for b in entry["bootstrap"])
    markdown = build_report(bad, fmt="markdown", plots=False, data=card)
    page = html.unescape(
        re.sub("<[^>]+>", "", build_report(bad, fmt="html", plots=False, data=card))
    )
    banner = f"The fit failed its MCMC gates: {diagnostics['gates_note']}."
    assert f"**{_md_text(banner)}**" in markdown and banner in page
    for text in (markdown, page):
        assert "posterior mean [95%] ⚠" in text and "posterior ⚠ (fit failed its gates)" in text
        assert "undecided (the fit failed its MCMC gates: 45 divergent transitions" in text


def test_a_signed_number_that_rounds_to_zero_has_no_sign():
    assert [_signed(x) for x in (-0.0002, 0.0002, -0.0, -0.0006, None)] == [
        "0.000",
        "0.000",
        "0.000",
        "-0.001",
        "n/a",
    ]


def test_figures_and_posterior_sections_of_a_failed_fit_say_so(tau_pair):
    from bayeval.report.render import GATE_FLAG

    res, (a, b) = tau_pair
    bad = _failing(res)
    for fit, flagged in ((res, False), (bad, True)):
        card = report_data(fit, comparisons=[(b, a)], margin=0.02, n_boot=200)
        card["curves"] = curves_section(
            fit, [(b, a)], k=[1, 2], metric="pass@k", estimand="tasks", ci_prob=0.95,
            n_boot=200, seed=0,
        )  # fmt: skip
        page = html.unescape(build_report(fit, fmt="html", data=card))
        markdown = build_report(fit, fmt="markdown", data=card)
        for text in (page, markdown):
            # the forest and the effect figures draw posterior numbers; the status bars do not
            assert (text.count(GATE_FLAG) >= 2) is flagged
            assert ("The posterior curve comes from a fit that failed" in text) is flagged
