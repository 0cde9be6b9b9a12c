"""Contamination overlap evidence and the clean-versus-flagged readout."""

import json
import sys

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval.contamination import compare_subsets, leakage_audit, normalize, overlap
from bayeval.testing import fake_results

VOCAB = [f"w{i}" for i in range(5000)]


def _words(rng, n, vocab=VOCAB):
    return [vocab[i] for i in rng.integers(0, len(vocab), n)]


def _grams(words, n=3):
    """Reference n-grams of a word list (the generated texts have no case or punctuation)."""
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


# -- overlap -----------------------------------------------------------------------------------
def _planted(seed=0, n_items=60, n_background=400):
    rng = np.random.default_rng(seed)
    item_words = [_words(rng, int(rng.integers(30, 60))) for _ in range(n_items)]
    items = {f"item{i}": " ".join(w) for i, w in enumerate(item_words)}
    corpus = [(f"bg{j}", " ".join(_words(rng, 80))) for j in range(n_background)]
    planted = {}
    for i in range(0, 10):  # exact copies: the document is the item
        corpus.append((f"exact{i}", items[f"item{i}"]))
        planted[f"item{i}"] = ("exact", f"exact{i}")
    for i in range(10, 20):  # reformatted and embedded in a longer document
        words = [w.upper() if j % 3 == 0 else w for j, w in enumerate(item_words[i])]
        text = ",  ".join(words) + "!"
        corpus.append(
            (f"ref{i}", " ".join(_words(rng, 40)) + "\n\t" + text + " " + " ".join(_words(rng, 40)))
        )
        planted[f"item{i}"] = ("reformatted", f"ref{i}")
    for i in range(20, 30):  # paraphrase-like: 10% of the words replaced, embedded
        words = list(item_words[i])
        for j in rng.choice(len(words), size=len(words) // 10, replace=False):
            words[j] = f"x{rng.integers(10**6)}"
        corpus.append((f"para{i}", " ".join(_words(rng, 30)) + " " + " ".join(words)))
        planted[f"item{i}"] = ("paraphrase", f"para{i}", words)
    order = rng.permutation(len(corpus))
    return items, item_words, [corpus[j] for j in order], planted


def test_planted_copies_are_found_and_clean_items_are_not():
    items, item_words, corpus, planted = _planted()
    out = overlap(items, iter(corpus), methods=("exact", "normalized", "shingle"))
    assert out.index.tolist() == list(items)
    assert out.attrs["n_documents"] == len(corpus)
    for item, plant in planted.items():
        row = out.loc[item]
        if plant[0] == "exact":
            assert row["label"] == "confirmed" and row["exact"] and row["exact_doc"] == plant[1]
            assert row["normalized"] and row["containment"] == 1.0
        elif plant[0] == "reformatted":
            assert row["label"] == "confirmed" and not row["exact"]
            assert row["containment"] == 1.0 and row["containment_doc"] == plant[1]
        else:
            reference = _grams(item_words[int(item[4:])])
            expected = len(reference & _grams(plant[2])) / len(reference)
            assert row["containment"] == pytest.approx(expected)
            assert row["containment_doc"] == plant[1]
            assert row["label"] == (
                "confirmed" if expected >= 0.8 else "suspected" if expected >= 0.5 else "none"
            )
            assert row["label"] != "none"
    clean = out.drop(index=list(planted))
    assert (clean["label"] == "none").all()
    assert "no overlap found is not proof of absence" in out.attrs["limits"].lower()
    assert out.attrs["confirmed_containment"] == 0.8


def test_shingle_scores_equal_a_brute_force_over_every_document():
    rng = np.random.default_rng(3)
    vocab = VOCAB[:12]  # a small vocabulary: many partial overlaps
    items = {i: " ".join(_words(rng, int(rng.integers(2, 15)), vocab)) for i in range(40)}
    docs = [" ".join(_words(rng, int(rng.integers(0, 25)), vocab)) for _ in range(150)]
    out = overlap(items, docs, methods=("shingle",), chunk_size=7)
    for i, text in items.items():
        a = _grams(text.split())
        if not a:
            assert out.loc[i, "n_shingles"] == 0 and np.isnan(out.loc[i, "jaccard"])
            assert out.loc[i, "label"] == "none"
            continue
        jac = [len(a & _grams(d.split())) / len(a | _grams(d.split())) for d in docs]
        con = [len(a & _grams(d.split())) / len(a) for d in docs]
        assert out.loc[i, "n_shingles"] == len(a)
        assert out.loc[i, "jaccard"] == pytest.approx(max(jac))
        assert out.loc[i, "containment"] == pytest.approx(max(con))
        if max(con) > 0:  # the first document with the largest score
            assert out.loc[i, "containment_doc"] == int(np.argmax(con))
            assert out.loc[i, "jaccard_doc"] == int(np.argmax(jac))
    assert out.attrs["n_items_without_shingles"] == sum(len(t.split()) < 3 for t in items.values())
    same = overlap(items, docs, methods=("shingle",), chunk_size=10_000)
    pd.testing.assert_frame_equal(out, same)


def test_minhash_tracks_exact_jaccard_within_its_standard_error():
    pytest.importorskip("datasketch")
    rng = np.random.default_rng(5)
    items, docs, truth = {}, [], {}
    for i in range(60):
        base = _words(rng, 200)
        keep = int(rng.integers(140, 200))  # Jaccard from about 0.4 to 1
        other = base[:keep] + _words(rng, 200 - keep)
        items[i] = " ".join(base)
        docs.append(" ".join(other))
        a, b = _grams(base), _grams(other)
        truth[i] = len(a & b) / len(a | b)
    out = overlap(items, docs, methods=("minhash",), minhash_threshold=0.3, num_perm=256)
    found = out["minhash_jaccard"].notna()
    assert found.mean() > 0.95  # LSH returns nearly all pairs above its threshold
    errors, ses = [], []
    for i in out.index[found]:
        j = truth[i]
        errors.append(out.loc[i, "minhash_jaccard"] - j)
        ses.append(np.sqrt(j * (1 - j) / 256))
    z = np.abs(np.array(errors)) / np.maximum(ses, 1e-3)
    assert np.mean(z <= 2) >= 0.85
    assert np.max(np.abs(errors)) <= 4 * 0.5 / np.sqrt(256)
    assert out.attrs["lsh_bands"] * out.attrs["lsh_rows"] <= 256
    assert set(out.loc[found & (out["minhash_jaccard"] >= 0.5), "label"]) <= {"suspected"}


def test_without_datasketch_the_other_methods_work_and_minhash_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasketch", None)  # import datasketch now fails
    items = {"a": "one two three four five"}
    with pytest.raises(ImportError, match=r"bayeval\[contamination\]"):
        overlap(items, ["one two three four five"])
    out = overlap(items, ["one two three four five"], methods=("exact", "normalized", "shingle"))
    assert out.loc["a", "label"] == "confirmed"
    assert "minhash_jaccard" not in out.columns


def test_normalisation_is_case_whitespace_and_punctuation():
    assert normalize("Ｈｅｌｌｏ,\tWORLD!  it's_a  TEST.") == "hello world it s a test"
    out = overlap(
        {"q": "Hello, world: it's a test."},
        ["HELLO WORLD it s  a test"],
        methods=("exact", "normalized"),
    )
    assert out.loc["q", "normalized"] and not out.loc["q", "exact"]


def test_overlap_refuses_bad_input():
    with pytest.raises(TypeError, match="not one string"):
        overlap({"a": "x y z"}, "a corpus")
    with pytest.raises(TypeError, match="document 1 .*position 1"):
        overlap({"a": "x y z"}, ["ok", 3], methods=("exact",))
    with pytest.raises(ValueError, match=r"items \['b'\] are empty"):
        overlap({"a": "x y z", "b": " "}, ["x"])
    with pytest.raises(TypeError, match=r"items \['b'\] are not"):
        overlap({"a": "x y z", "b": 5}, ["x"])
    with pytest.raises(ValueError, match="methods must be one of"):
        overlap({"a": "x y z"}, ["x"], methods=("exact", "fuzzy"))
    with pytest.raises(ValueError, match="must not exceed"):
        overlap(
            {"a": "x y z"},
            ["x"],
            methods=("shingle",),
            suspected_containment=0.9,
            confirmed_containment=0.8,
        )
    items = {"a": "x y z"}
    overlap(items, ["x y z"], methods=("exact",))
    assert items == {"a": "x y z"}


# -- compare_subsets ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def leak():
    """Two systems; a third of the tasks leaked, which lifts their rates by a known amount."""
    rng = np.random.default_rng(7)
    n_tasks, n_trials = 45, 40
    p = rng.beta(2, 5, (2, n_tasks))
    flagged = np.zeros(n_tasks, bool)
    flagged[rng.choice(n_tasks, 15, replace=False)] = True
    p[:, flagged] = np.clip(p[:, flagged] + 0.3, 0, 1)
    c = rng.binomial(n_trials, p)
    tasks = [f"t{j}" for j in range(n_tasks)]
    data = be.from_counts(c, trials=n_trials, systems=["A", "B"], tasks=tasks)
    truth = p[:, flagged].mean(1) - p[:, ~flagged].mean(1)
    return data, pd.Series(flagged, index=tasks), truth, p


@pytest.fixture(scope="module")
def contaminated(leak):
    """A real fit: compare_subsets refits each subset with the fit's own settings."""
    data, mask, truth, p = leak
    res = be.fit(data, model="hierarchical", draws=1000, chains=2, seed=3)
    return res, mask, truth, p


@pytest.fixture(scope="module")
def contaminated_fake(leak):
    """The same data as a fake posterior, for the readings that do not refit."""
    data, mask, _, _ = leak
    return fake_results(data, model="hierarchical", draws=1000, chains=2, seed=3), mask


def test_compare_subsets_equals_a_direct_computation_from_task_rate_draws(contaminated_fake):
    res, mask = contaminated_fake
    out = compare_subsets(res, mask, metric="pass@k", k=2, estimand="tasks", refit=False)
    rates = res.task_rates().transpose("chain", "draw", "system", "task").values
    f = 1 - (1 - rates) ** 2
    flagged = mask.to_numpy()
    expected = {
        "all": f.mean(-1),
        "clean": f[..., ~flagged].mean(-1),
        "flagged": f[..., flagged].mean(-1),
    }
    for subset, values in expected.items():
        np.testing.assert_allclose(out["score"].sel(subset=subset).values, values, rtol=1e-12)
    np.testing.assert_allclose(
        out["difference"].values, expected["flagged"] - expected["clean"], rtol=1e-12
    )
    diff = expected["flagged"] - expected["clean"]
    np.testing.assert_allclose(out["prob_flagged_higher"].values, (diff > 0).mean((0, 1)))
    np.testing.assert_allclose(
        out["difference_interval"].values, np.quantile(diff, [0.025, 0.975], axis=(0, 1)).T
    )
    np.testing.assert_allclose(
        out["inflation"].values, expected["all"] - expected["clean"], rtol=1e-12
    )
    # 'all' is the fit's own tasks estimand
    np.testing.assert_allclose(
        out["score"].sel(subset="all").values,
        res.pass_at_k(k=2, estimand="tasks").values,
        rtol=1e-10,
    )
    assert out["n_tasks"].values.tolist() == [[45, 30, 15], [45, 30, 15]]
    assert out["score"].dims == ("chain", "draw", "system", "subset")
    assert out["score_interval"].dims == ("system", "subset", "ci_bound")


def _simulate_leak(rng, n_tasks=40, n_trials=20, lift=0.25):
    p = rng.beta(2, 5, n_tasks)
    flagged = np.zeros(n_tasks, bool)
    flagged[rng.choice(n_tasks, n_tasks // 3, replace=False)] = True
    p[flagged] = np.clip(p[flagged] + lift, 0, 1)
    data = be.from_counts(rng.binomial(n_trials, p), trials=n_trials)
    return data, flagged, p[flagged].mean() - p[~flagged].mean()


def test_compare_subsets_interval_covers_a_known_contamination_effect(contaminated):
    res, mask, truth, _ = contaminated
    out = compare_subsets(res, mask, estimand="tasks")
    assert (out["difference_interval"].sel(ci_bound="lower") > 0).all()
    # coverage over repeated simulations with a known effect (95% intervals)
    rng = np.random.default_rng(2024)
    covered = []
    for i in range(20):
        data, flagged, effect = _simulate_leak(rng)
        fit = be.fit(data, model="hierarchical", draws=300, chains=2, seed=i, log_likelihood=False)
        out = compare_subsets(fit, flagged, estimand="tasks", log_likelihood=False)
        lower, upper = out["difference_interval"].values[0]
        covered.append(lower <= effect <= upper)
    assert np.mean(covered) >= 0.8  # 0.95 nominal: P(fewer than 16 of 20) = 0.016


def test_compare_subsets_accepts_lists_arrays_and_overlap_frames(contaminated_fake):
    res, mask = contaminated_fake
    reference = compare_subsets(res, mask, estimand="tasks", refit=False)["difference"].values
    ids = mask.index[mask].tolist()
    frame = pd.DataFrame({"label": np.where(mask, "suspected", "none")}, index=mask.index)
    for form in (ids, set(ids), mask.to_numpy(), frame):
        np.testing.assert_array_equal(
            compare_subsets(res, form, estimand="tasks", refit=False)["difference"].values,
            reference,
        )
    with pytest.raises(ValueError, match=r"missing \['t0'\]"):
        compare_subsets(res, mask.drop("t0"))
    with pytest.raises(ValueError, match=r"unknown tasks \['zz'\]"):
        compare_subsets(res, ["t1", "zz"])
    with pytest.raises(ValueError, match="both the clean and the flagged"):
        compare_subsets(res, mask.index.tolist())
    with pytest.raises(TypeError, match="booleans"):
        compare_subsets(res, mask.astype(int))
    with pytest.raises(ValueError, match="implies refit=True"):
        compare_subsets(res, ids, estimand="population", refit=False)


def test_tasks_reading_fits_each_subset_alone_and_reads_its_task_rates(contaminated):
    res, mask, _, _ = contaminated
    out = compare_subsets(res, mask, metric="pass^k", k=2, estimand="tasks")
    clean_seed, flagged_seed = json.loads(out.attrs["refit_seeds"])
    flagged_fit = be.fit(
        res.data.sel(task=mask.index[mask].tolist()),
        model="hierarchical",
        draws=1000,
        chains=2,
        seed=flagged_seed,
    )
    rates = flagged_fit.task_rates().transpose("chain", "draw", "system", "task").values
    np.testing.assert_allclose(
        out["score"].sel(subset="flagged").values, (rates**2).mean(-1), rtol=1e-10
    )
    np.testing.assert_allclose(
        out["score"].sel(subset="all").values,
        res.pass_hat_k(k=2, estimand="tasks").values,
        rtol=1e-12,
    )
    assert out.attrs["refit"] == 1 and out.attrs["estimand"] == "tasks"
    # machine values in the attrs; the reading in words only under a *_note
    assert out.attrs["random_units"] == "tasks" and "reading" not in out.attrs
    assert out.attrs["reading_note"] == "each subset fitted alone (tasks estimand)"


def test_population_reading_fits_each_subset_alone(contaminated):
    res, mask, _, _ = contaminated
    out = compare_subsets(res, mask, estimand="population", draws=400, seed=11)
    clean_seed, flagged_seed = json.loads(out.attrs["refit_seeds"])
    assert clean_seed == 11 != flagged_seed  # the flagged subset's own seed, spawned from 11
    clean = be.fit(
        res.data.sel(task=mask.index[~mask].tolist()),
        model="hierarchical",
        draws=400,
        chains=2,
        seed=clean_seed,
    )
    np.testing.assert_allclose(
        out["score"].sel(subset="clean").values, clean.pass_at_k(k=1, estimand="population").values
    )
    whole = be.fit(res.data, model="hierarchical", draws=400, chains=2, seed=11)
    np.testing.assert_allclose(
        out["score"].sel(subset="all").values, whole.pass_at_k(k=1, estimand="population").values
    )
    assert (out["difference_interval"].sel(ci_bound="lower") > 0).all()
    assert out.attrs["refit"] == 1
    same = compare_subsets(res, mask, estimand="population")  # the fit's own settings
    np.testing.assert_allclose(
        same["score"].sel(subset="all").values, res.pass_at_k(k=1, estimand="population").values
    )


def test_subset_refits_are_independent_so_the_difference_is_not_too_narrow():
    """With few attempts per task the two subsets' posteriors have nearly the same shape;
    fitted with one seed, their draws were coupled and the difference's interval far too
    narrow. As independent samples of tasks, its sd is that of a difference of independent
    draws."""
    data = be.from_counts([[2, 0, 1, 0, 2, 1, 1, 0, 0, 2, 1]], trials=2, systems=["s"])
    res = be.fit(data, model="hierarchical", draws=1000, chains=2, seed=1)
    out = compare_subsets(res, np.array([True] * 6 + [False] * 5))
    flagged = out["score"].sel(subset="flagged").values.ravel()
    clean = out["score"].sel(subset="clean").values.ravel()
    assert abs(np.corrcoef(flagged, clean)[0, 1]) < 0.1
    independent = np.sqrt(flagged.var() + clean.var())
    assert float(out["difference"].std()) == pytest.approx(independent, rel=0.15)
    lower, upper = out["difference_interval"].values.ravel()
    assert lower < 0 < upper  # 6 of 12 against 4 of 10 decides nothing


def test_leakage_audit_has_one_row_per_channel_and_system(contaminated):
    res, mask, _, _ = contaminated
    rng = np.random.default_rng(0)
    placebo = pd.Series(rng.random(len(mask)) < 0.3, index=mask.index)
    audit = leakage_audit(res, {"leaked": mask, "placebo": placebo}, estimand="tasks")
    assert audit[["channel", "system"]].values.tolist() == [
        ["leaked", "A"],
        ["leaked", "B"],
        ["placebo", "A"],
        ["placebo", "B"],
    ]
    direct = compare_subsets(res, mask, estimand="tasks")
    row = audit.iloc[1]
    assert row["difference"] == pytest.approx(float(direct["difference_mean"].sel(system="B")))
    assert row["inflation_lower"] == pytest.approx(
        float(direct["inflation_interval"].sel(system="B", ci_bound="lower"))
    )
    assert audit.loc[audit["channel"] == "leaked", "moves"].all()
    with pytest.raises(ValueError, match="channel 'bad'"):
        leakage_audit(res, {"bad": ["nope"]})
