"""Real evaluation results bundled with bayeval (see ``data/README.md`` for provenance).

Each dataset is a tidy CSV shipped inside the package. :func:`load` reads it with the column
roles and the status mapping documented here; every argument of :func:`bayeval.from_frame`
can be overridden (a different ``status_map``, a ``missing`` policy, ...).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from bayeval._validate import describe_values
from bayeval.data import EvalData, from_frame

__all__ = ["available", "load", "frame", "path"]

#: Column roles and status mappings of each bundled dataset.
DATASETS: dict[str, dict] = {
    "swebench_verified": {
        "file": "swebench_verified_mini_swe_agent.csv",
        "description": "SWE-bench Verified, mini-SWE-agent: 25 systems x 500 tasks x 1 trial, "
        "12 repository clusters",
        "columns": {"cluster": "cluster"},
    },
    "terminal_bench": {
        "file": "terminal_bench_core_0.1.1.csv",
        "description": "Terminal-Bench core 0.1.1: 13 systems x 80 tasks x 5 trials, 70 task "
        "families, 428 attempts not ok: 418 outcomes without a verdict and 10 "
        "recorded failures under an agent error (needs missing=)",
        # Rows with a recorded verdict stay valid whatever their raw status (a timed-out agent
        # whose tests ran has a verdict), except under the two agent-error statuses: an agent
        # that failed to install or crashed was not measured, so its 10 recorded failures are
        # marked 'error' with the 104 such rows that have no verdict.
        "columns": {
            "trial": "trial",
            "cluster": "cluster",
            "status": "status",
            "status_map": {
                "parse_error": "invalid",
                "test_timeout": "timeout",
                "unknown_agent_error": "error",
                "agent_installation_failed": "error",
            },
        },
    },
    "livecodebench": {
        "file": "livecodebench_codegen_2024-04-17.csv",
        "description": "LiveCodeBench code generation: 45 systems x 400 problems as counts "
        "(10 samples for 43 systems, 1 for 2), platform clusters, difficulty "
        "strata",
        "columns": {
            "successes": "n_correct",
            "trials": "n_samples",
            "cluster": "cluster",
            "stratum": "difficulty",
        },
    },
    "tau_bench_airline": {
        "file": "tau_bench_gpt4o_airline.csv",
        "description": "tau-bench airline, gpt-4o: 1 system x 50 tasks x 4 trials (pass^k)",
        "columns": {"trial": "trial"},
    },
    "swebench_java": {
        "file": "swebench_java_verified_statuses.csv",
        "description": "Multi-SWE-bench Java Verified: 5 systems x 91 tasks x 1 trial with "
        "explicit statuses, 6 repository clusters (needs missing=)",
        # empty_patch keeps its recorded failure unless mapped (e.g. to "invalid"): whether an
        # empty patch is a failure or a missing outcome is the user's modelling choice.
        "columns": {
            "cluster": "cluster",
            "status": "status",
            "status_map": {"incomplete": "not_run"},
        },
    },
    "judging_the_judges": {
        "file": "judging_the_judges_triviaqa.csv",
        "description": "Judging the Judges, TriviaQA: 9 systems x 395 tasks x 1 trial, the "
        "verdicts of 3 judges (GPT-4 Turbo, Llama-3 70B, lexical Contains) and a human "
        "label on every answer",
        # every answer is labelled: mask labels at random to study a judge with a labelled
        # sample, and compare with the all-labels rate as the truth
        "columns": {
            "success": "human",
            "judge": ["judge_gpt4", "judge_llama3_70b", "judge_contains"],
            "label_design": "random",
        },
    },
    "langchain_tool_use": {
        "file": "langchain_tool_use_typewriter_small.csv",
        "description": "LangChain tool-use (typewriter, small): 9 systems x 20 tasks x 1 trial",
        "columns": {},
    },
}


def available() -> dict[str, str]:
    """Names and one-line descriptions of the bundled datasets.

    Examples
    --------
    >>> import bayeval as be
    >>> "swebench_verified" in be.datasets.available()
    True
    """
    return {name: spec["description"] for name, spec in DATASETS.items()}


def _spec(name: str) -> dict:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; available: {describe_values(DATASETS)}")
    return DATASETS[name]


def path(name: str) -> Path:
    """Path of a bundled dataset's CSV file.

    Examples
    --------
    >>> import bayeval as be
    >>> be.datasets.path("tau_bench_airline").name
    'tau_bench_gpt4o_airline.csv'
    """
    filename = _spec(name)["file"]
    packaged = resources.files("bayeval") / "_data" / filename
    if packaged.is_file():
        return Path(str(packaged))
    source = Path(__file__).resolve().parent.parent / "data" / filename
    if source.is_file():
        return source
    raise FileNotFoundError(f"bundled file {filename!r} is missing from this installation")


def frame(name: str) -> pd.DataFrame:
    """The raw tidy table of a bundled dataset, as shipped.

    Examples
    --------
    >>> import bayeval as be
    >>> be.datasets.frame("tau_bench_airline").shape
    (200, 11)
    """
    return pd.read_csv(path(name))


def load(name: str, **overrides) -> EvalData:
    """Load a bundled dataset as :class:`~bayeval.EvalData`.

    Parameters
    ----------
    name : str
        One of :func:`available`.
    **overrides
        Arguments of :func:`bayeval.from_frame` replacing the dataset's defaults, e.g.
        ``missing="fail"`` or another ``status_map``.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.datasets.load("terminal_bench", missing="exclude")
    >>> data.status_counts.sum().to_dict()["no_verdict"]
    0
    >>> int(data.status_counts.sum()["invalid"])
    182
    """
    spec = _spec(name)
    columns = {**spec["columns"], **overrides}
    return from_frame(frame(name), **columns)
