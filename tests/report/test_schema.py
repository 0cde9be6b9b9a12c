"""The --json outputs carry a schema_version and validate against the shipped JSON Schemas."""

import copy
import json
from importlib import resources

import jsonschema
import pandas as pd
import pytest
from click.testing import CliRunner

from bayeval import cli
from bayeval.report import SCHEMA_VERSION

GRID = [
    "--model",
    "hierarchical",
    "--sampler",
    "grid",
    "--draws",
    "200",
    "--chains",
    "2",
    "--n-boot",
    "200",
]


def schema(name):
    return json.loads(
        resources.files("bayeval.report").joinpath(f"schemas/{name}.schema.json").read_text()
    )


@pytest.fixture(scope="module")
def counts(tmp_path_factory):
    path = tmp_path_factory.mktemp("json") / "runs.csv"
    rows = [
        {"system": s, "task": f"t{j}", "successes": c, "trials": 8}
        for s, row in {
            "A": [1, 2, 3, 4, 5, 6],
            "B": [2, 3, 3, 5, 6, 7],
            "C": [0, 1, 1, 2, 2, 3],
        }.items()
        for j, c in enumerate(row)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _json(*args):
    out = CliRunner().invoke(cli.main, [str(a) for a in args] + ["--json", "-"])
    assert out.exit_code in (0, 1, 3), out.output
    return json.loads(out.stdout[out.stdout.index("{") :])


def test_analyze_gate_and_rank_json_validate(counts):
    analyzed = _json("analyze", counts, "--compare", "B", "A", *GRID)
    gated = _json("gate", counts, "--compare", "B", "A", "--margin", "0.05", *GRID)
    ranked = _json("rank", counts, *GRID)
    for record, name in ((analyzed, "report"), (gated, "report"), (ranked, "rank")):
        assert record["schema_version"] == SCHEMA_VERSION
        jsonschema.validate(record, schema(name))
    assert gated["gate"]["verdict"] in ("PASS", "FAIL", "UNDECIDED")


def test_the_schemas_reject_a_changed_layout(counts):
    record = _json("analyze", counts, "--compare", "B", "A", *GRID)
    broken = copy.deepcopy(record)
    del broken["comparisons"][0]["bayes"]["decision"]
    with pytest.raises(jsonschema.ValidationError, match="'decision' is a required property"):
        jsonschema.validate(broken, schema("report"))
    broken = copy.deepcopy(record)
    broken["schema_version"] = "1"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema("report"))
