"""The ``bayeval`` command: end-to-end runs of the installed command, and in-process checks."""

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import bayeval as be
from bayeval import cli
from bayeval.planning import paired_spread
from bayeval.simulate import simulate_benchmark
from tests.helpers import ROOT

FAST = ["--sampler", "grid", "--draws", "200", "--chains", "2", "--n-boot", "500"]
NUTS = ["--model", "logit_normal", "--draws", "50", "--tune", "50", "--chains", "1"]
NUTS += ["--n-boot", "200"]


def run_installed(*args, cwd):
    """Run the installed ``bayeval`` command (or ``python -m bayeval.cli``) on this tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("MPLBACKEND", None)
    script = shutil.which("bayeval", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "bayeval.cli"]
    return subprocess.run(
        command + [str(a) for a in args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
        check=False,
    )


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.svgs, self.tables = [], 0, 0

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs).get("src", ""))
        self.svgs += tag == "svg"
        self.tables += tag == "table"


def inline_plots(text: str) -> _Images:
    page = _Images()
    page.feed(text)
    page.close()
    return page


def invoke(*args, **kwargs):
    return CliRunner().invoke(cli.main, [str(a) for a in args], **kwargs)


def write_counts(path, candidate, baseline, trials):
    """A count-row CSV (system, task, successes, trials) of two systems."""
    tasks = [f"t{j}" for j in range(len(candidate))]
    frame = pd.concat(
        [
            pd.DataFrame({"system": name, "task": tasks, "successes": counts, "trials": trials})
            for name, counts in (("baseline", baseline), ("candidate", candidate))
        ]
    )
    frame.to_csv(path, index=False)
    return path


# -- the installed command, end to end ---------------------------------------------------------
def test_analyze_swebench_json_equals_the_api_and_html_holds_plots(tmp_path):
    data = be.datasets.load("swebench_verified")
    a, b = data.systems[:2]
    result = run_installed(
        "analyze",
        be.datasets.path("swebench_verified"),
        *FAST,
        "--seed",
        3,
        "--compare",
        a,
        b,
        "--margin",
        0.02,
        "--json",
        "out.json",
        "--report",
        "card.html",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "note: with one trial per task" in result.stderr
    assert "columns: system=system, task=task, success=success, cluster=cluster" in result.stdout
    words = "a new task like these 500 (the 12 clusters not modelled)"
    assert f"{a} - {b}: pass@1, population estimand ({words})" in result.stdout
    assert f"bootstrap twin (estimand population: {words})" in result.stdout
    out = json.loads((tmp_path / "out.json").read_text())
    # the table shows no trial bootstrap: its zero width is the card's note, not the terminal's
    zero = "with one trial per task the trial bootstrap has zero width"
    assert zero not in result.stderr and any(n.startswith(zero) for n in out["notes"])
    assert out["estimand"]["words"]["population"] == words

    # a comparison fits what it needs: only the compared systems
    data = data.sel(system=[s for s in data.systems if s in (a, b)])
    assert {row["system"] for row in out["metrics"]} == {a, b}
    with pytest.warns(be.BayevalWarning, match="one trial per task"):
        res = be.fit(data, model="hierarchical", sampler="grid", draws=200, chains=2, seed=3)
    assert out["settings"]["fit"]["input_hash"] == data.fingerprint()
    with pytest.warns(be.BayevalWarning, match="zero width"):
        check = be.crosscheck(res, k=[1], n_boot=500, seed=3)
    for row in out["metrics"]:
        cell = check.sel(estimand=row["estimand"], system=row["system"], k=row["k"])
        assert row["bayes_mean"] == float(cell["bayes_mean"])
        interval = cell["bootstrap_interval"].values.tolist()
        if row["bootstrap_unit"] == "trial":  # one trial per task: no width, so no interval
            assert interval[0] == interval[1] and "one trial per task" in row["bootstrap_note"]
            interval = [None, None]
        assert [row["bootstrap_lower"], row["bootstrap_upper"]] == interval
    entry = out["comparisons"][0]
    cmp = res.compare(a, b, k=1, estimand="population", margin=0.02)
    assert entry["bayes"]["rows"][0]["effect"] == float(cmp["effect_mean"])
    assert entry["bayes"]["rows"][0]["prob_noninferior"] == float(cmp["prob_noninferior"])
    assert entry["bayes"]["decision"]["decision"] == be.noninferiority(cmp, 0.02).attrs["decision"]
    cluster = be.bootstrap.compare(data, a, b, k=1, unit="cluster", n_boot=500, seed=3, margin=0.02)
    boot = next(x for x in entry["bootstrap"] if x["unit"] == "cluster")
    assert [boot["rows"][0]["lower"], boot["rows"][0]["upper"]] == cluster[
        "effect_interval"
    ].values.tolist()
    record = next(r for r in out["data"]["status_counts"] if r["system"] == a)
    assert record == {
        "system": a,
        **{s: (500 if s == "ok" else 0) for s in be.STATUSES},
        "coverage": 1.0,
    }
    assert out["settings"]["command"].startswith("bayeval analyze ")

    page = inline_plots((tmp_path / "card.html").read_text())
    assert page.tables >= 5
    plots = [src for src in page.images if src.startswith("data:image/")]
    if _has_matplotlib():
        # forest, effect; at one trial per task the task rates and the ppc say nothing
        assert len(plots) + page.svgs >= 2
        assert len(plots) == len(page.images)


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def test_a_piped_log_keeps_its_lines_in_order(tmp_path):
    path = write_counts(tmp_path / "c.csv", [3, 5, 1, 8, 6, 2], [2, 4, 1, 7, 5, 2], 10)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    result = subprocess.run(
        [sys.executable, "-m", "bayeval.cli", "analyze", str(path), *NUTS],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one pipe, as `bayeval ... 2>&1 | tee log` has it
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    keys = ("read ", "EvalData", "fitting logit_normal", "fit: model", "summarising:")
    first = {key: next(i for i, line in enumerate(lines) if line.startswith(key)) for key in keys}
    # what was read, the fit's status line, what was fitted, the summaries: as they happened
    assert [first[key] for key in keys] == sorted(first.values())


def test_terminal_bench_is_refused_without_missing(tmp_path):
    result = run_installed("analyze", be.datasets.path("terminal_bench"), *FAST, cwd=tmp_path)
    assert result.returncode == 2
    message = result.stderr.strip()
    assert "418 of 5200 planned attempts are not 'ok' (ok: 4782, no_verdict: 418)" in message
    assert "--missing" in message and "'bounds'" in message and "Traceback" not in message


def test_terminal_bench_with_missing_bounds(tmp_path):
    frame = be.datasets.frame("terminal_bench")
    systems = list(dict.fromkeys(frame["system"]))[:4]
    path = tmp_path / "tb.csv"
    frame[frame["system"].isin(systems)].to_csv(path, index=False)
    result = run_installed(
        "analyze",
        path,
        *FAST,
        "--missing",
        "bounds",
        "--k",
        "1,5",
        "--compare",
        systems[1],
        systems[0],
        "--compare",
        systems[2],
        systems[0],
        "--json",
        "out.json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "column 'status' not used" in result.stdout
    out = json.loads((tmp_path / "out.json").read_text())
    assert {r["missing_bound"] for r in out["metrics"]} == {"lower", "upper"}
    assert out["data"]["missing_policy"] == "bounds"

    # only the compared systems are fitted
    data = be.from_frame(
        frame[frame["system"].isin(systems[:3])], trial="trial", cluster="cluster", missing="bounds"
    )
    assert out["data"]["status_totals"] == data.status_counts.sum().to_dict()
    res = be.fit(data, sampler="grid", draws=200, chains=2, seed=0)
    cmp = res.compare(systems[1], systems[0], k=1)
    rows = out["comparisons"][0]["bayes"]["rows"]
    assert [r["effect"] for r in rows] == cmp["effect_mean"].values.tolist()
    assert out["multiplicity"]["size"] == 2
    p = [c["bootstrap"][0]["p_value"] for c in out["comparisons"]]
    assert out["multiplicity"]["adjusted"] == be.adjust_pvalues(p, "holm").tolist()
    assert "[lower]" in result.stdout and "[upper]" in result.stdout


# -- gate --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gate_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gate")
    rng = np.random.default_rng(5)
    low, high = rng.binomial(10, 0.3, 60), rng.binomial(10, 0.8, 60)
    return {
        "better": write_counts(folder / "better.csv", high, low, 10),
        "worse": write_counts(folder / "worse.csv", low, high, 10),
        "tiny": write_counts(folder / "tiny.csv", [1, 0, 1], [1, 0, 1], 1),
    }


@pytest.mark.parametrize(
    "case, code, verdict",
    [
        ("better", 0, "PASS: non-inferior"),
        ("worse", 1, "FAIL: inferior"),
        ("tiny", 3, "UNDECIDED: inconclusive"),
    ],
)
def test_gate_exit_codes(gate_files, case, code, verdict):
    result = invoke(
        "gate", gate_files[case], "--compare", "candidate", "baseline", "--margin", 0.02, *FAST
    )
    assert result.exit_code == code, result.output
    assert verdict in result.output
    assert "posterior effect" in result.output and "P(effect > -0.02)" in result.output


def test_gate_superiority_and_json(gate_files, tmp_path):
    result = invoke(
        "gate",
        gate_files["worse"],
        "--compare",
        "candidate",
        "baseline",
        "--margin",
        0.05,
        "--superior",
        *FAST,
        "--json",
        tmp_path / "gate.json",
    )
    assert result.exit_code == 1
    out = json.loads((tmp_path / "gate.json").read_text())
    statement = out["comparisons"][0]["bayes"]["decision"]["statement"]
    assert out["gate"] == {
        "decision": "not superior",
        "exit_code": 1,
        "verdict": "FAIL",
        "statement": statement,
        "gates_passed": True,
        "gates_failed": [],
    }
    # the verdict is printed with the one-sided bound it rests on, in the JSON's words
    assert statement.startswith("not superior: one-sided 95% upper bound -")
    assert f"FAIL: {statement}; exit 1" in result.output
    assert out["comparisons"][0]["test"] == "superiority"


@pytest.mark.parametrize("case, code", [("better", 0), ("worse", 1)])
def test_gate_json_records_the_exit_code_it_exits_with(gate_files, tmp_path, case, code):
    pair = ["--compare", "candidate", "baseline", "--margin", 0.02]
    json_path, report_path = tmp_path / "gate.json", tmp_path / "gate.md"
    result = invoke(
        "gate", gate_files[case], *pair, *FAST, "--json", json_path, "--report", report_path
    )
    assert result.exit_code == code, result.output
    assert json.loads(json_path.read_text())["gate"]["exit_code"] == code
    assert report_path.read_text().startswith("# bayeval report")


def test_gate_json_is_not_left_behind_by_a_run_that_exits_2(gate_files, tmp_path, monkeypatch):
    # the report fails after the decision: the run exits 2, so no JSON may record the verdict's 1
    def fail(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(be.report, "write_report", fail)
    json_path = tmp_path / "gate.json"
    result = invoke(
        "gate",
        gate_files["worse"],
        *["--compare", "candidate", "baseline", "--margin", 0.02],
        *FAST,
        *["--json", json_path, "--report", tmp_path / "gate.html"],
    )
    assert result.exit_code == 2 and "No space left on device" in result.output
    recorded = json.loads(json_path.read_text())["gate"]["exit_code"] if json_path.exists() else 2
    assert recorded == result.exit_code


def test_unwritable_outputs_are_refused_before_the_fit(gate_files, tmp_path, monkeypatch):
    def fit(*args, **kwargs):
        raise AssertionError("fitted before the output paths were checked")

    monkeypatch.setattr(be, "fit", fit)
    (tmp_path / "out").mkdir()
    (tmp_path / "card_files").write_text("a file where the figures go")
    args = ["gate", gate_files["worse"], "--compare", "candidate", "baseline", "--margin", 0.02]
    for option, path, why in [
        ("--json", tmp_path / "out", "it is a folder"),
        ("--json", tmp_path / "nowhere" / "g.json", "does not exist"),
        ("--report", tmp_path / "out", "is a directory"),
        ("--report", tmp_path / "card.md", "card_files', but a file has that name"),
    ]:
        result = invoke(*args, *FAST, option, path)
        assert result.exit_code == 2, result.output
        assert "Invalid value for" in result.output and option in result.output
        assert why in result.output
        assert str(path.parent) in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card_files", "out"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_a_folder_without_write_permission_is_refused_before_the_fit(gate_files, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    try:
        result = invoke(
            "gate",
            gate_files["worse"],
            *["--compare", "candidate", "baseline", "--margin", 0.02],
            *["--json", folder / "g.json"],
        )
    finally:
        folder.chmod(0o700)
    assert result.exit_code == 2 and "does not take new files" in result.output


def test_gate_unexpected_error_exits_4(monkeypatch, gate_files):
    def boom(*args, **kwargs):
        raise RuntimeError("the sampler\nfell over")

    monkeypatch.setattr(be, "fit", boom)
    result = invoke(
        "gate", gate_files["better"], "--compare", "candidate", "baseline", "--margin", 0.02, *FAST
    )
    assert result.exit_code == 4
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "unexpected RuntimeError: the sampler fell over" in lines[0]


def test_gate_usage_errors_exit_2(gate_files):
    result = invoke("gate", gate_files["better"], "--compare", "candidate", "baseline", *FAST)
    assert result.exit_code == 2 and "--margin" in result.output
    result = invoke(
        "gate", gate_files["better"], "--compare", "nobody", "baseline", "--margin", 0.02, *FAST
    )
    assert result.exit_code == 2
    assert "candidate 'nobody' is not a system" in result.output
    assert "baseline, candidate" in result.output


def test_fit_gets_no_progress_bar_off_a_terminal(monkeypatch, gate_files):
    """Off a terminal the fit is asked for its progress, which it writes as plain log lines
    (tests/cli/test_progress.py): no bar, no carriage return, no escape code."""
    seen = {}
    fit = be.fit

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return fit(*args, **kwargs)

    monkeypatch.setattr(be, "fit", spy)
    result = invoke(
        "gate", gate_files["better"], "--compare", "candidate", "baseline", "--margin", 0.02, *FAST
    )
    assert result.exit_code == 0 and seen["progress"] is True
    assert "\r" not in result.stderr and "\x1b" not in result.stderr
    assert (seen["draws"], seen["chains"], seen["sampler"], seen["seed"]) == (200, 2, "grid", 0)


# -- analyze options ---------------------------------------------------------------------------
def test_status_map_and_json_to_stdout(tmp_path):
    mapping = be.datasets.DATASETS["terminal_bench"]["columns"]["status_map"]
    frame = be.datasets.frame("terminal_bench")
    path = tmp_path / "tb.csv"
    frame[frame["system"].isin(frame["system"].unique()[:2])].to_csv(path, index=False)
    text = ",".join(f"{raw}={status}" for raw, status in mapping.items())
    result = invoke(
        "analyze",
        path,
        "--status-map",
        text,
        "--missing",
        "exclude",
        "--model",
        "beta_binomial",
        "--draws",
        100,
        "--chains",
        1,
        "--n-boot",
        200,
        "--json",
        "-",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    expected = be.from_frame(
        pd.read_csv(path),
        trial="trial",
        cluster="cluster",
        status="status",
        status_map=mapping,
        missing="exclude",
    )
    assert out["data"]["status_totals"] == expected.status_counts.sum().to_dict()
    assert out["estimand"]["name"] == "tasks"  # the only estimand of beta_binomial
    # the same map from a JSON file
    (tmp_path / "map.json").write_text(json.dumps(mapping))
    again = invoke(
        "analyze",
        path,
        "--status-map",
        tmp_path / "map.json",
        "--missing",
        "exclude",
        "--model",
        "beta_binomial",
        "--draws",
        100,
        "--chains",
        1,
        "--n-boot",
        200,
        "--json",
        "-",
    )
    assert json.loads(again.stdout)["data"] == out["data"]


def test_bad_options_name_the_option(tmp_path):
    path = be.datasets.path("tau_bench_airline")
    result = invoke("analyze", path, "--status-map", "user=finished")
    assert result.exit_code == 2
    assert "--status-map" in result.output and "no_verdict" in result.output
    result = invoke("analyze", path, "--status-map", "user")
    assert result.exit_code == 2 and "no '='" in result.output
    result = invoke("analyze", path, "--cluster", "repository")
    assert result.exit_code == 2 and "no column 'repository'" in result.output
    result = invoke("analyze", path, "--k", "1,x")
    assert result.exit_code == 2 and "'x' is not one" in result.output
    result = invoke("analyze", path, *FAST, "--k", "5")
    assert result.exit_code == 2 and "needs at least 5 valid trials" in result.output
    result = invoke("analyze", path, "--report", tmp_path / "card.pdf")
    assert result.exit_code == 2 and "end the path in one of .html" in result.output
    result = invoke("analyze", path, "--json", tmp_path / "missing" / "out.json")
    assert result.exit_code == 2 and "does not exist" in result.output


def test_count_rows_with_named_columns(tmp_path):
    frame = be.datasets.frame("livecodebench")
    frame = frame[frame["system"].isin(frame["system"].unique()[:2])]
    frame.to_csv(tmp_path / "lcb.csv", index=False)
    result = invoke(
        "analyze",
        tmp_path / "lcb.csv",
        "--successes",
        "n_correct",
        "--trials",
        "n_samples",
        "--stratum",
        "difficulty",
        *FAST,
        "--k",
        "1,10",
        "--metric",
        "pass^k",
    )
    assert result.exit_code == 0, result.output
    assert "(count rows)" in result.output and "pass^10 posterior" in result.output


# -- power -------------------------------------------------------------------------------------
def test_power_from_declared_spreads():
    result = invoke("power", "--effect", "0.02,0.05", "--sd", 0.3, "--json", "-")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert [r["tasks_needed"] for r in rows] == [
        be.required_units(0.3, 0.02),
        be.required_units(0.3, 0.05),
    ]
    result = invoke(
        "power", "--effect", 0.05, "--sd", 0.4, "--icc", 0.5, "--trials", "1,4", "--json", "-"
    )
    rows = json.loads(result.stdout)["rows"]
    sd4 = 0.4 * np.sqrt(0.5 + 0.5 / 4)
    assert rows[1]["sd"] == pytest.approx(sd4)
    assert rows[1]["tasks_needed"] == be.required_units(float(sd4), 0.05)
    assert rows[1]["episodes_needed"] == 2 * 4 * rows[1]["tasks_needed"]
    table = invoke("power", "--effect", 0.05, "--sd", 0.4, "--icc", 0.5)
    assert "tasks needed" in table.output and "episodes (2 systems)" in table.output
    result = invoke("power", "--effect", 0.05, "--sd", 0.4, "--trials", 4)
    assert result.exit_code == 2 and "--icc" in result.output
    result = invoke("power", "--effect", 0.05)
    assert result.exit_code == 2 and "--sd" in result.output


def test_power_from_a_pilot(tmp_path):
    sim = simulate_benchmark(n_tasks=50, n_trials=4, n_systems=2, effect=0.5, seed=2)
    ds = sim.data.dataset
    frame = ds[["successes", "trials"]].to_dataframe().reset_index()
    frame.to_csv(tmp_path / "pilot.csv", index=False)
    result = invoke(
        "power",
        "--effect",
        0.05,
        "--pilot",
        tmp_path / "pilot.csv",
        "--compare",
        "system_1",
        "system_0",
        "--json",
        "-",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    spread = paired_spread(sim.data, "system_1", "system_0")
    assert out["pilot"]["sd"] == float(spread["sd"])
    assert out["pilot"]["icc"] == float(spread["icc"])
    rows = {r["trials_per_task"]: r for r in out["rows"]}
    assert sorted(rows) == [1, 2, 4, 8, 16]
    assert rows[4]["sd"] == pytest.approx(float(spread["sd"]))  # the pilot's own trials
    assert rows[4]["tasks_needed"] == be.required_units(rows[4]["sd"], 0.05)
    assert rows[1]["tasks_needed"] >= rows[4]["tasks_needed"] >= rows[16]["tasks_needed"]


# -- demo and help -----------------------------------------------------------------------------
def test_demo_writes_its_report(tmp_path):
    result = invoke("demo", "--n-boot", 500, "--report", tmp_path / "demo.html")
    assert result.exit_code == 0, result.output
    # the 12 repositories, four of them under ten tasks, support these repositories, not a
    # new one: the twin resamples tasks within them and the cluster bootstrap stands beside
    words = "a new task from these 12 clusters, weighted by their tasks"
    assert f"pass@1, population estimand ({words})" in result.output
    assert f"the posterior's twin: tasks resampled within their clusters ({words})" in (
        result.output
    )
    assert "paired bootstrap by cluster: clusters resampled, keeping their sizes" in result.output
    # the header names both fits, after both ran; no zero-width column, but why not
    assert "fit (per-system table): model hierarchical, sampler grid" in result.output
    assert "fit (comparisons): model logit_normal" in result.output
    assert "tasks pass@1 posterior" in result.output
    assert "bootstrap (trial)" not in result.output.split("(left out:")[0]
    assert "(left out: tasks pass@1 bootstrap (trial): with one trial per task" in result.output
    page = inline_plots((tmp_path / "demo.html").read_text())
    if _has_matplotlib():
        # forest and effect; one trial per task leaves the per-task figure and the
        # predictive check out, each with a sentence saying why
        assert len([s for s in page.images if s.startswith("data:image/png;base64,")]) >= 2
        text = (tmp_path / "demo.html").read_text()
        assert "No per-task figure: with one trial per task" in text
        assert "so there is nothing to check" in text


def test_help_reads_well():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("analyze", "gate", "power", "demo"):
        assert command in result.output
    gate_help = invoke("gate", "--help").output
    assert "Exit codes:" in gate_help and "3  undecided: the data cannot decide" in gate_help
    assert "bayeval gate runs.csv --compare new old --margin 0.02" in gate_help
    assert "--missing [fail|exclude|bounds]" in invoke("analyze", "--help").output


def test_gate_says_how_its_cluster_bootstrap_weighs_clusters(tmp_path):
    rng = np.random.default_rng(2)
    tasks = [f"t{j}" for j in range(24)]
    frame = pd.concat(
        [
            pd.DataFrame(
                {
                    "system": name,
                    "task": tasks,
                    "cluster": [f"g{j % 6}" for j in range(24)],
                    "successes": rng.binomial(10, p, 24),
                    "trials": 10,
                }
            )
            for name, p in (("baseline", 0.4), ("candidate", 0.6))
        ]
    )
    path = tmp_path / "clustered.csv"
    frame.to_csv(path, index=False)
    result = invoke("gate", path, "--compare", "candidate", "baseline", "--margin", 0.02, *FAST)
    assert result.exit_code in (0, 1, 3), result.output
    assert "paired bootstrap (cluster, clusters keep their sizes)" in result.output


def test_a_table_of_scores_is_pointed_to_analyze_by_the_0_1_commands(tmp_path):
    # analyze reads scores (tests/cli/test_analyze_scores.py); rank and gate analyse 0/1 outcomes
    path = tmp_path / "scores.csv"
    pd.DataFrame(
        {"system": ["A", "A", "B", "B"], "task": ["t1", "t2"] * 2, "score": [0.5, 1.0, 0.25, 0.0]}
    ).to_csv(path, index=False)
    result = invoke("rank", path)
    assert result.exit_code == 2
    assert "this table holds scores" in result.output
    assert "bayeval analyze FILE --score COLUMN" in result.output


def test_progress_and_quiet(gate_files, monkeypatch):
    seen = []
    real = be.fit

    def spy(*args, **kwargs):
        seen.append(kwargs.get("progress"))
        return real(*args, **kwargs)

    monkeypatch.setattr(be, "fit", spy)
    args = (
        "gate",
        gate_files["better"],
        "--compare",
        "candidate",
        "baseline",
        "--margin",
        0.02,
        *FAST,
    )
    loud = CliRunner().invoke(cli.main, ["--progress", *map(str, args)])
    quiet = CliRunner().invoke(cli.main, ["--quiet", *map(str, args)])
    assert loud.exit_code == quiet.exit_code == 0, loud.output
    assert seen == [True, False]
    assert "summarising: posterior readouts" in loud.stderr
    assert "summarising" not in quiet.stderr and "PASS" in quiet.stdout


def test_fit_shows_progress_in_a_jupyter_kernel(monkeypatch):
    import sys
    import types

    from bayeval.inference import interactive

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert interactive()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert not interactive()


@pytest.fixture
def platforms_csv(tmp_path, monkeypatch):
    """Two LiveCodeBench systems on problems of its 3 platforms, and a fake paired fit."""
    from bayeval.testing import fake_results

    frame = be.datasets.frame("livecodebench")
    pair = ["GPT-4-Turbo-2024-04-09", "Claude-3-Opus"]
    tasks = frame.drop_duplicates("task").groupby("cluster").head(15)["task"]
    rows = frame[frame["system"].isin(pair) & frame["task"].isin(tasks)]
    path = tmp_path / "lcb.csv"
    rows.drop(columns="difficulty").to_csv(path, index=False)

    def fake_fit(data, model="auto", draws=100, chains=2, seed=0, **_):
        chosen = "logit_normal" if model == "auto" else model
        return fake_results(data, model=chosen, draws=100, chains=2, seed=seed)

    monkeypatch.setattr(be, "fit", fake_fit)  # the plumbing, not a sampler's numbers
    return path, pair


def test_analyze_asks_about_a_new_platform_only_when_told(platforms_csv):
    path, pair = platforms_csv
    common = ["analyze", path, "--successes", "n_correct", "--trials-column", "n_samples"]
    common += ["--model", "logit_normal", "--n-boot", 300, "--compare", *pair]
    default = invoke(*common)
    assert default.exit_code == 0, default.output
    these = "a new task from these 3 clusters, weighted by their tasks"
    assert f"pass@1, population estimand ({these})" in default.output
    assert "note: population estimand: 3 clusters are too few" in default.output
    new = invoke(*common, "--clusters", "new")
    assert new.exit_code == 0, new.output
    words = "a new task from a new cluster, each cluster weighing the same"
    assert f"pass@1, population estimand ({words})" in new.output
    assert "decision: inconclusive (the cluster bootstrap resamples 3 clusters: 10 distinct" in (
        new.output
    )
    assert "note: population estimand:" not in new.output
    observed = invoke(*common, "--clusters", "observed", "--weighting", "cluster")
    assert "a new task from these 3 clusters, each weighing the same" in observed.output
    refused = invoke(*common[:-3], "--model", "hierarchical", "--clusters", "new")
    assert refused.exit_code == 2 and "need a paired model" in refused.output


def test_pass_at_k_where_each_systems_trials_allow(tmp_path):
    from scipy.special import comb

    path = be.datasets.path("livecodebench")
    ten, one = ["GPT-4-Turbo-2024-04-09", "Claude-3-Opus"], ["Gemini-Pro-1.5 (n=1)"]
    result = invoke(
        "analyze",
        path,
        "--successes",
        "n_correct",
        "--trials",  # a second name of --trials-column
        "n_samples",
        "--k",
        "1,5",
        "--systems",
        ",".join(ten),
        "--systems",
        one[0],
        *FAST,
        "--json",
        tmp_path / "out.json",
    )
    assert result.exit_code == 0, result.output
    assert "systems: 3 of the file's, as --systems names them" in result.output
    assert "(n/a: pass@5 of Gemini-Pro-1.5 (n=1): 1 trial(s) in some task" in result.output
    out = json.loads((tmp_path / "out.json").read_text())
    frame = pd.read_csv(path)
    for row in out["metrics"]:
        if row["system"] in one and row["k"] == 5:
            assert row["bayes_mean"] is None and row["bootstrap_estimate"] is None
            assert row["unavailable"].startswith("1 trial(s) in some task")
            continue
        assert row.get("unavailable") is None
        if row["metric"] == "pass@k" and row["k"] == 5:
            rows = frame[frame["system"] == row["system"]]
            n, c = rows["n_samples"].to_numpy(), rows["n_correct"].to_numpy()
            unbiased = (1 - comb(n - c, 5) / comb(n, 5)).mean()
            assert row["bootstrap_estimate"] == pytest.approx(unbiased, abs=1e-12)
    counts = ["--successes", "n_correct", "--trials-column", "n_samples"]
    unknown = invoke("analyze", path, *counts, "--systems", f"{ten[0]},nope", *FAST)
    assert unknown.exit_code == 2 and "['nope'] is not a system of the data" in unknown.output
