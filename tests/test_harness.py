"""Harness digests, diffs, comparability checks, canaries and reward gaps."""

import copy
import hashlib
import json
import random
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bayeval as be
from bayeval import harness
from bayeval.data import from_counts, from_frame
from bayeval.simulate import simulate_benchmark
from bayeval.testing import fake_results

# -- digests -----------------------------------------------------------------------------------
leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
configs = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
mappings = st.dictionaries(st.text(max_size=6), configs, min_size=1, max_size=5)


def _shuffled(value, rng):
    """The same configuration with every object's keys in another order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def _integral_as_int(value):
    """Whole floats written as integers (``1.0`` -> ``1``): one JSON number either way."""
    if isinstance(value, dict):
        return {k: _integral_as_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_as_int(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _leaves(value, trail=()):
    """Every value that is not a non-empty container (an empty one is a field too)."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _leaves(v, trail + (k,))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _leaves(v, trail + (i,))
    else:
        yield trail, value


def _replace(value, trail, new):
    out = copy.deepcopy(value)
    target = out
    for key in trail[:-1]:
        target = target[key]
    target[trail[-1]] = new
    return out


def _same_json(a, b) -> bool:
    """Independent reference: equal as JSON values (numbers by value, True != 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return type(a) is type(b) and a == b


def test_digest_is_sha256_of_hand_canonicalised_bytes():
    config = {
        "z": [3, 2.5, "é", 0.1 + 0.2],
        "a": {"y": None, "b": True},
        "n": 1.0,
        "big": 1e21,
        "neg": -0.0,
    }
    expected = (
        '{"a":{"b":true,"y":null},"big":1e+21,"n":1,"neg":0,"z":[3,2.5,"é",0.30000000000000004]}'
    ).encode()
    assert harness.digest(config) == hashlib.sha256(expected).hexdigest()
    # RFC 8785 sorts keys by UTF-16 code units: U+1F600 (D83D DE00) before U+FB33
    unicode_keys = {"\ufb33": 1, "\U0001f600": 2, "\u20ac": 3}
    expected = '{"\u20ac":3,"\U0001f600":2,"\ufb33":1}'.encode()
    assert harness.digest(unicode_keys) == hashlib.sha256(expected).hexdigest()


@settings(max_examples=60, deadline=None)
@given(config=mappings, order_seed=st.integers(0, 10**6), indent=st.sampled_from([None, 0, 4]))
def test_digest_ignores_key_order_whitespace_and_number_formatting(config, order_seed, indent):
    reference = harness.digest(config)
    rng = random.Random(order_seed)
    reordered = _shuffled(config, rng)
    reformatted = json.loads(json.dumps(reordered, indent=indent, separators=(", ", " : ")))
    assert harness.digest(reordered) == reference
    assert harness.digest(reformatted) == reference
    assert harness.digest(_integral_as_int(config)) == reference
    assert harness.diff(config, reformatted) == {}


@settings(max_examples=60, deadline=None)
@given(config=mappings, data=st.data())
def test_any_single_field_changes_the_digest_and_diff_names_it(config, data):
    trails = [t for t, _ in _leaves(config)]
    trail = data.draw(st.sampled_from(trails))
    old = dict(_leaves(config))[trail]
    new = data.draw(leaves.filter(lambda v: not _same_json(v, old)))
    changed = _replace(config, trail, new)
    assert harness.digest(changed) != harness.digest(config)
    differences = harness.diff(config, changed)
    assert len(differences) == 1
    assert list(differences.values()) == [(old, new)]


@settings(max_examples=60, deadline=None)
@given(a=mappings, b=mappings)
def test_diff_is_empty_exactly_when_digests_agree(a, b):
    assert (harness.diff(a, b) == {}) == (harness.digest(a) == harness.digest(b))


def test_diff_names_exactly_the_fields_that_differ():
    a = {
        "model": {"temperature": 0.2, "max_tokens": 1000},
        "tools": ["bash", "edit", "view"],
        "env": {"image tag": "v1"},
        "scorer": "exact",
        "seed": 1,
    }
    b = {
        "model": {"temperature": 0.2, "max_tokens": 1000.0},
        "tools": ["bash", "grep"],
        "env": {"image tag": "v2"},
        "scorer": "exact",
        "judge": {"name": "gpt"},
    }
    assert harness.diff(a, b) == {
        'env["image tag"]': ("v1", "v2"),
        "judge": (harness.MISSING, {"name": "gpt"}),
        "seed": (1, harness.MISSING),
        "tools[1]": ("edit", "grep"),
        "tools[2]": ("view", harness.MISSING),
    }
    assert harness.diff({"a": {"b": 1}}, {"a": [1]}) == {"a": ({"b": 1}, [1])}
    assert harness.diff({"flag": True}, {"flag": 1}) == {"flag": (True, 1)}
    assert harness.diff(1, 2) == {"<root>": (1, 2)}


def test_tuples_are_json_arrays_and_numpy_scalars_their_values():
    assert harness.digest({"a": (1, 2)}) == harness.digest({"a": [1, 2]})
    assert harness.digest({"a": np.float64(0.5), "b": np.int32(3)}) == harness.digest(
        {"a": 0.5, "b": 3}
    )


@pytest.mark.parametrize(
    "config, error, words",
    [
        (
            {"sampling": {"temperature": float("nan")}},
            ValueError,
            ["'sampling.temperature'", "NaN"],
        ),
        ({"budget": [1, float("inf")]}, ValueError, ["'budget[1]'", "infinity"]),
        ({"seed": 2**60}, ValueError, ["'seed'", "2**53"]),
        ({"a": {1: "x"}}, TypeError, ["'a'", "not strings"]),
        ({"data": b"bytes"}, TypeError, ["'data'", "bytes", "hashlib"]),
        ({"tags": {"x", "y"}}, TypeError, ["'tags'", "sorted list"]),
        ({"file": Path("tasks.jsonl")}, TypeError, ["'file'", "digest_file"]),
        ({"when": pd.Timestamp(0)}, TypeError, ["'when'", "Timestamp", "allowed"]),
        ({"x y": {"arr": np.zeros(2)}}, TypeError, ["'[\"x y\"].arr'", "tolist"]),
    ],
)
def test_digest_refuses_what_json_cannot_hold_naming_the_field(config, error, words):
    with pytest.raises(error) as info:
        harness.digest(config)
    for word in words:
        assert word in str(info.value)


def test_digest_refuses_a_circular_configuration():
    config = {"a": []}
    config["a"].append(config)
    with pytest.raises(ValueError, match="circular"):
        harness.digest(config)


def test_digest_file_is_sha256_of_the_bytes(tmp_path):
    content = bytes(range(256)) * 5000
    path = tmp_path / "tasks.bin"
    path.write_bytes(content)
    assert harness.digest_file(path, chunk_size=1000) == hashlib.sha256(content).hexdigest()
    with pytest.raises(ValueError, match="directory"):
        harness.digest_file(tmp_path)


# -- harness column ----------------------------------------------------------------------------
CONFIG_A = {"temperature": 0.2, "scorer": {"name": "tests", "version": "1.0"}}
CONFIG_B = {"temperature": 0.7, "scorer": {"name": "tests", "version": "1.1"}}


def _frame(config_a=CONFIG_A, config_b=CONFIG_B):
    rows = []
    for system, config in (("A", config_a), ("B", config_b), ("C", config_a)):
        for task in range(4):
            for trial in range(3):
                rows.append(
                    {
                        "system": system,
                        "task": f"t{task}",
                        "trial": trial,
                        "success": (task + trial + len(system)) % 2,
                        "config": dict(config),
                    }
                )  # one copy per row, as read from logs
    return pd.DataFrame(rows)


def test_harness_column_of_configs_is_digested_per_system():
    df = _frame()
    before = df.copy(deep=True)
    data = from_frame(df, trial="trial", harness="config")
    pd.testing.assert_frame_equal(df, before)
    assert data.harness == {
        "A": harness.digest(CONFIG_A),
        "B": harness.digest(CONFIG_B),
        "C": harness.digest(CONFIG_A),
    }
    assert data.harness_configs == {
        harness.digest(CONFIG_A): CONFIG_A,
        harness.digest(CONFIG_B): CONFIG_B,
    }


def test_harness_survives_sel_with_missing_to_frame_and_a_netcdf_round_trip(tmp_path):
    df = _frame().assign(config=lambda d: d["config"].map(harness.digest))
    df.loc[0, "success"] = np.nan
    data = from_frame(df, trial="trial", harness="config", missing="fail")
    expected = {
        "A": harness.digest(CONFIG_A),
        "B": harness.digest(CONFIG_B),
        "C": harness.digest(CONFIG_A),
    }
    assert data.harness == expected
    assert data.harness_configs is None
    assert data.sel(system=["C", "B"], task=["t1"]).harness == {
        "C": expected["C"],
        "B": expected["B"],
    }
    assert data.with_missing("exclude").harness == expected
    frame = data.to_frame()
    assert frame.groupby("system")["harness"].unique().map(list).to_dict() == {
        s: [d] for s, d in expected.items()
    }
    assert data.fingerprint() != from_frame(df, trial="trial", missing="fail").fingerprint()
    res = fake_results(data, model="hierarchical", draws=50, chains=1, seed=0)
    path = tmp_path / "fit.nc"
    res.to_netcdf(path)
    assert be.load(path).data.harness == expected


def test_harness_column_refuses_a_system_under_several_harnesses():
    df = _frame()
    df.loc[df.index[-2:], "config"] = [dict(CONFIG_B), dict(CONFIG_B)]  # two rows of C
    with pytest.raises(ValueError) as info:
        from_frame(df, trial="trial", harness="config")
    message = str(info.value)
    assert "system 'C' has 2" in message
    assert harness.digest(CONFIG_A) in message and harness.digest(CONFIG_B) in message
    assert f"rows [{df.index[-2]}, {df.index[-1]}]" in message


@pytest.mark.parametrize(
    "value, error, words",
    [
        (None, ValueError, ["missing values", "row [5]"]),
        (3, TypeError, ["digests (str) or configurations", "row [5]"]),
        (" ", ValueError, ["empty harness digest", "row [5]"]),
        ({"t": float("nan")}, ValueError, ["'t'", "NaN"]),
    ],
)
def test_harness_column_refuses_bad_cells(value, error, words):
    df = _frame().assign(config="digest-a")
    df["config"] = df["config"].astype(object)
    df.at[5, "config"] = value
    with pytest.raises(error) as info:
        from_frame(df, trial="trial", harness="config")
    for word in words:
        assert word in str(info.value)


# -- check_comparable --------------------------------------------------------------------------
def test_check_comparable_refuses_naming_both_digests_and_the_differing_fields():
    data = from_frame(_frame(), trial="trial", harness="config")
    with pytest.raises(ValueError) as info:
        harness.check_comparable(data, ["B", "A"])
    message = str(info.value)
    assert harness.digest(CONFIG_A) in message and harness.digest(CONFIG_B) in message
    assert "['B']" in message and "['A']" in message
    assert 'scorer.version: "1.1" -> "1.0"' in message
    assert "temperature: 0.7 -> 0.2" in message
    assert "allow_harness_change=True" in message


def test_check_comparable_allowed_is_flagged_for_every_output():
    data = from_frame(_frame(), trial="trial", harness="config")
    check = harness.check_comparable(data, ["A", "B"], allow_harness_change=True)
    assert check.status == "changed" and check.changed and check.allowed
    assert check.fields == {"scorer.version": ("1.0", "1.1"), "temperature": (0.2, 0.7)}
    assert check.note.startswith("harness changed: ")
    assert harness.digest(CONFIG_B) in check.note
    assert check.attrs["harness_status"] == "changed"
    assert check.attrs["harness_note"] == check.note
    assert json.loads(check.attrs["harness_digests"]) == {
        "A": harness.digest(CONFIG_A),
        "B": harness.digest(CONFIG_B),
    }
    same = harness.check_comparable(data, ["A", "C"])
    assert (same.status, same.note, same.changed) == ("same", "", False)


def test_check_comparable_names_fields_from_configs_given_by_system_or_digest():
    df = _frame().assign(config=lambda d: d["config"].map(harness.digest))
    data = from_frame(df, trial="trial", harness="config")
    with pytest.raises(ValueError, match="pass configs="):
        harness.check_comparable(data, ["A", "B"])
    for configs in (
        {"A": CONFIG_A, "B": CONFIG_B},
        {harness.digest(CONFIG_A): CONFIG_A, harness.digest(CONFIG_B): CONFIG_B},
    ):
        check = harness.check_comparable(data, ["A", "B"], True, configs=configs)
        assert set(check.fields) == {"scorer.version", "temperature"}
    with pytest.raises(ValueError, match="not its configuration"):
        harness.check_comparable(data, ["A", "B"], configs={"A": CONFIG_B})
    with pytest.raises(ValueError, match="neither a system"):
        harness.check_comparable(data, ["A", "B"], configs={"Z": CONFIG_B})


def test_check_comparable_without_recorded_harness_and_on_results():
    data = from_counts([[1, 2], [2, 2]], trials=3, systems=["A", "B"])
    check = harness.check_comparable(data, ["A", "B"])
    assert check.status == "unrecorded" and check.note == ""
    res = fake_results(
        from_frame(_frame(), trial="trial", harness="config"),
        model="hierarchical",
        draws=20,
        chains=1,
        seed=0,
    )
    with pytest.raises(ValueError, match="different harnesses"):
        harness.check_comparable(res, ["A", "B"])
    with pytest.raises(ValueError, match="unknown system"):
        harness.check_comparable(data, ["A", "Z"])
    with pytest.raises(TypeError, match="EvalData or a Results"):
        harness.check_comparable({"A": 1}, ["A"])


def test_check_comparable_reads_the_data_an_object_carries():
    data = from_frame(_frame(), trial="trial", harness="config")
    carrier = types.SimpleNamespace(data=data)
    with pytest.raises(ValueError, match="different harnesses"):
        harness.check_comparable(carrier, ["A", "B"])
    assert harness.check_comparable(carrier, ["A", "C"]).status == "same"
    with pytest.raises(TypeError, match="EvalData or a Results; got SimpleNamespace"):
        harness.check_comparable(types.SimpleNamespace(data={"A": 1}), ["A"])


# -- canary ------------------------------------------------------------------------------------
def test_canary_paired_fit_covers_a_known_drift_and_says_moved():
    sim = simulate_benchmark(
        n_tasks=24, n_trials=12, n_systems=2, rates="beta_2_5", effect=1.0, seed=3
    )
    truth = sim.effect_truth("pass@k", 1, "tasks")
    # a fit that passes its gates (a failed one would be "undecided"; test above)
    out = harness.canary(
        sim.data,
        "scripted",
        "system_0",
        "system_1",
        margin=0.05,
        draws=2000,
        chains=4,
        tune=1000,
        seed=1,
    )
    assert out.attrs["gates_failed"] == []
    lower, upper = out["effect_interval"].values
    assert lower <= truth <= upper
    assert truth > 0.1  # the drift is well beyond the margin
    assert out.attrs["verdict"] == "moved"
    assert out.attrs["fit_model"] == "logit_normal" and out.attrs["paired"]
    assert out.attrs["canary"] == "scripted"


def test_canary_whose_fit_failed_its_gates_is_undecided(monkeypatch):
    data = be.from_counts([[8, 9, 7, 9, 8], [8, 9, 8, 9, 8]], trials=10, systems=["v1", "v2"])
    fake = fake_results(data, model="logit_normal", seed=0)
    tree = fake.tree
    tree.attrs["diagnostics"] = json.dumps({**fake.diagnostics, "divergences": 12})
    failing = type(fake)(tree)
    monkeypatch.setattr(harness, "_fit_paired", lambda combined, options: failing)
    out = harness.canary(data, "scripted", "v1", "v2", margin=0.5)
    lower, upper = out["effect_interval"].values
    assert -0.5 <= lower and upper <= 0.5  # the interval alone would say "stable"
    assert out.attrs["verdict"] == "undecided"
    assert out.attrs["gates_failed"] == ["divergences"]
    assert "12 divergent transitions" in out.attrs["gates_note"]
    monkeypatch.setattr(harness, "_fit_paired", lambda combined, options: fake)
    assert harness.canary(data, "scripted", "v1", "v2", margin=0.5).attrs["verdict"] == "stable"


def test_canary_stable_when_the_harness_did_not_move_it():
    sim = simulate_benchmark(
        n_tasks=60,
        n_trials=30,
        n_systems=2,
        rates="uniform",
        effect=0.0,
        task_system_sd=0.05,
        seed=5,
    )
    truth = sim.effect_truth("pass@k", 1, "tasks")
    out = harness.canary(
        sim.data,
        "scripted",
        "system_0",
        "system_1",
        margin=0.05,
        model="hierarchical",
        draws=1000,
        chains=2,
        seed=0,
    )
    lower, upper = out["effect_interval"].values
    assert lower <= truth <= upper and abs(truth) < 0.01
    assert -0.05 <= lower and upper <= 0.05
    assert out.attrs["verdict"] == "stable"
    draws = out["effect"].values.ravel()
    assert float(out["prob_within_margin"]) == pytest.approx(np.mean(np.abs(draws) <= 0.05))


def test_canary_inconclusive_on_too_little_data_and_the_rule_at_its_edges():
    data = from_counts([[1, 2, 0], [2, 1, 1]], trials=2, systems=["old", "new"])
    out = harness.canary(
        data,
        "scripted",
        "old",
        "new",
        margin=0.05,
        model="hierarchical",
        draws=500,
        chains=2,
        seed=0,
    )
    assert out.attrs["verdict"] == "inconclusive"
    verdict = harness._verdict
    assert verdict(-0.05, 0.05, 0.05) == "stable"
    assert verdict(0.0501, 0.2, 0.05) == "moved" and verdict(-0.3, -0.06, 0.05) == "moved"
    assert verdict(0.04, 0.2, 0.05) == "inconclusive"


def test_canary_from_one_evaluation_per_harness_equals_two_systems_of_one():
    counts = np.array([[8, 2, 9, 5, 7, 1], [6, 3, 9, 4, 5, 1]])
    d_old = harness.digest({"image": "env:1"})
    d_new = harness.digest({"image": "env:2"})
    frames = {}
    for key, row, d in (("v1", 0, d_old), ("v2", 1, d_new)):
        frames[key] = from_frame(
            pd.DataFrame(
                {
                    "system": ["scripted"] * 6 + ["other"] * 6,
                    "task": list(range(6)) * 2,
                    "successes": list(counts[row]) + [5] * 6,
                    "trials": 10,
                    "h": d,
                }
            ),
            successes="successes",
            trials="trials",
            harness="h",
        )
    by_harness = harness.canary(
        frames,
        "scripted",
        "v1",
        "v2",
        margin=0.1,
        model="hierarchical",
        draws=400,
        chains=2,
        seed=4,
    )
    two_systems = harness.canary(
        from_counts(counts, trials=10, systems=["v1", "v2"]),
        "scripted",
        "v1",
        "v2",
        margin=0.1,
        model="hierarchical",
        draws=400,
        chains=2,
        seed=4,
    )
    np.testing.assert_array_equal(by_harness["effect"].values, two_systems["effect"].values)
    assert by_harness.attrs["baseline_digest"] == d_old
    assert by_harness.attrs["candidate_digest"] == d_new
    assert two_systems.attrs["baseline_digest"] == ""


def test_canary_of_one_evaluation_with_two_recorded_harnesses_compares_across_them():
    """Two runs of the canary recorded under different digests in one EvalData: the canary
    compares them (that is its purpose) and gives the same change as without digests."""
    counts = np.array([[8, 2, 9, 5, 7, 1], [6, 3, 9, 4, 5, 1]])
    d_old = harness.digest({"image": "env:1"})
    d_new = harness.digest({"image": "env:2"})
    frame = pd.DataFrame(
        {
            "system": ["v1"] * 6 + ["v2"] * 6,
            "task": list(range(6)) * 2,
            "successes": counts.ravel(),
            "trials": 10,
            "h": [d_old] * 6 + [d_new] * 6,
        }
    )
    recorded = from_frame(frame, successes="successes", trials="trials", harness="h")
    settings = dict(margin=0.1, model="hierarchical", draws=400, chains=2, seed=4)
    out = harness.canary(recorded, "scripted", "v1", "v2", **settings)
    plain = harness.canary(
        from_counts(counts, trials=10, systems=["v1", "v2"]), "scripted", "v1", "v2", **settings
    )
    np.testing.assert_array_equal(out["effect"].values, plain["effect"].values)
    assert out.attrs["verdict"] == plain.attrs["verdict"]
    assert (out.attrs["baseline_digest"], out.attrs["candidate_digest"]) == (d_old, d_new)
    assert out.attrs["harness_status"] == "changed" and d_new in out.attrs["harness_note"]


def test_canary_refuses_bad_arguments():
    data = from_counts([[1, 2], [2, 1]], trials=2, systems=["old", "new"])
    with pytest.raises(ValueError, match="margin must be"):
        harness.canary(data, "c", "old", "new", margin=0)
    with pytest.raises(ValueError, match="baseline 'x' is not a system"):
        harness.canary(data, "c", "x", "new", margin=0.1)
    with pytest.raises(ValueError, match="canary 'c' is not a system of data\\['a'\\]"):
        harness.canary({"a": data, "b": data}, "c", "a", "b", margin=0.1)
    other = from_counts([[1, 2, 2]], trials=2, tasks=["t0", "t1", "t9"], systems=["c"])
    same = from_counts([[1, 2]], trials=2, tasks=["t0", "t1"], systems=["c"])
    with pytest.raises(ValueError, match="same tasks.*'t9'"):
        harness.canary({"a": same, "b": other}, "c", "a", "b", margin=0.1)


# -- reward gap --------------------------------------------------------------------------------
def _reward_data(seed=11, n_tasks=40, n_trials=20):
    """Training reward and held-out verifier for one honest and one reward-hacking policy."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n_tasks)
    rates = {"honest": (p, p), "hacker": (np.full(n_tasks, 0.95), 0.3 * p)}
    train = np.stack([rng.binomial(n_trials, rates[s][0]) for s in rates])
    held = np.stack([rng.binomial(n_trials, rates[s][1]) for s in rates])
    truth = {s: float(np.mean(rates[s][0] - rates[s][1])) for s in rates}
    systems = list(rates)
    return (
        from_counts(train, trials=n_trials, systems=systems),
        from_counts(held, trials=n_trials, systems=systems),
        truth,
    )


def test_reward_gap_covers_the_true_gap_and_flags_the_hacker():
    train, held, truth = _reward_data()
    out = harness.reward_gap(
        train, held, margin=0.15, model="hierarchical", draws=1000, chains=2, seed=0
    )
    assert out["gap"].dims == ("chain", "draw", "system")
    for system in ("honest", "hacker"):
        lower, upper = out["gap_interval"].sel(system=system).values
        assert lower <= truth[system] <= upper
    assert out["flag"].values.tolist() == ["within", "exceeds"]
    draws = out["gap"].sel(system="hacker").values.ravel()
    assert float(out["prob_above_margin"].sel(system="hacker")) == pytest.approx(
        np.mean(draws > 0.15)
    )
    assert out.attrs["gap"] == "train - heldout"


def test_reward_gap_says_exactly_what_differs_between_the_two_outcome_sets():
    train = from_counts(
        [[1, 2, 3], [2, 2, 2]], trials=4, systems=["a", "b"], tasks=["t1", "t2", "t3"]
    )
    with pytest.raises(ValueError) as info:
        harness.reward_gap(
            train,
            from_counts([[1, 2, 3]], trials=4, systems=["a"], tasks=["t1", "t2", "t4"]),
            margin=0.1,
        )
    assert "systems only in data_train: ['b']" in str(info.value)
    assert "tasks only in data_train: ['t3'], only in data_heldout: ['t4']" in str(info.value)
    trials = np.array([[4, 4, 4], [4, 5, 4]])
    with pytest.raises(ValueError, match=r"planned trials differ in 1 .*\('b', 't2'\): 4 vs 5"):
        harness.reward_gap(
            train,
            from_counts(
                [[1, 2, 3], [2, 2, 2]], trials=trials, systems=["a", "b"], tasks=["t1", "t2", "t3"]
            ),
            margin=0.1,
        )
