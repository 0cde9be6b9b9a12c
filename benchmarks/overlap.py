"""Contamination overlap: MinHash accuracy, detection, scale and readout coverage.

Measured: the MinHash accuracy, the detection rates of planted copies, speed and memory at
scale, and the coverage of the clean-versus-flagged readout.

Run:  python benchmarks/overlap.py [--sizes 10000 100000 1000000] [--items 10000]
                                   [--sims 100] [--out benchmarks/results/overlap.txt]

1. MinHash estimates against exact 3-shingle Jaccard on generated text (pairs of documents
   sharing a known share of their words), with the stated standard error
   sqrt(J (1 - J) / num_perm).
2. Planted copies among generated items: exact copies, reformatted copies (case, whitespace,
   punctuation) as whole documents and embedded in longer ones, and paraphrase-like copies with
   10%, 20% and 30% of their words replaced; the share of each found (label other than
   ``none``) and confirmed, and the false-positive rate on clean items.
3. Time and peak memory of ``overlap`` for ``--items`` items against generated corpora of each
   size (each size in a fresh process: its peak resident memory is its own), all four methods.
   Text is drawn from a Zipf vocabulary so that common n-grams are shared by many items, the
   costly case for the shingle index.
4. ``compare_subsets`` on simulated benchmarks with a known contamination effect: bias and
   coverage of the 95% interval of flagged - clean, with each subset fitted alone (the
   default) and read from the joint fit's task-rate draws (``refit=False``).
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bayeval.contamination import _MinHashIndex, overlap, shingles  # noqa: E402

VOCAB_SIZE = 50_000
# Zipf's law for words (frequency proportional to 1 / rank): the top word is 9% of all words
_P = 1 / np.arange(1, VOCAB_SIZE + 1)
_P /= _P.sum()
_WORDS = np.array([f"w{r}" for r in range(VOCAB_SIZE)], dtype=object)


def zipf_words(rng, n):
    return list(_WORDS[rng.choice(VOCAB_SIZE, n, p=_P)])


def corpus_stream(n_docs, seed, length=100):
    """Generated documents, made in batches and yielded one at a time (never held whole)."""
    rng = np.random.default_rng(seed)
    batch = 1000
    for start in range(0, n_docs, batch):
        m = min(batch, n_docs - start)
        ranks = rng.choice(VOCAB_SIZE, (m, length), p=_P)
        for j, row in enumerate(ranks):
            yield start + j, " ".join(_WORDS[row])


# -- 1. MinHash accuracy -----------------------------------------------------------------------
def minhash_accuracy(n_pairs=500, num_perm=128, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_pairs):
        base = [f"u{i}" for i in rng.integers(0, 10**6, 150)]
        keep = int(rng.integers(0, 151))
        other = base[:keep] + [f"v{i}" for i in rng.integers(0, 10**6, 150 - keep)]
        a, b = shingles(" ".join(base)), shingles(" ".join(other))
        exact = len(a & b) / len(a | b)
        index = _MinHashIndex([a], threshold=0.5, num_perm=num_perm, seed=1)
        estimate = index.signature(b).jaccard(index.signatures[0])
        rows.append((exact, estimate))
    rows = np.array(rows)
    se = np.sqrt(rows[:, 0] * (1 - rows[:, 0]) / num_perm)
    err = rows[:, 1] - rows[:, 0]
    z = np.abs(err) / np.maximum(se, 1e-9)
    exact_ends = se == 0
    return {
        "pairs": n_pairs,
        "num_perm": num_perm,
        "mean_abs_error": float(np.mean(np.abs(err))),
        "max_abs_error": float(np.max(np.abs(err))),
        "bias": float(np.mean(err)),
        "share_within_1se": float(np.mean(z[~exact_ends] <= 1)),
        "share_within_2se": float(np.mean(z[~exact_ends] <= 2)),
        "exact_at_0_or_1": int(np.sum(exact_ends & (np.abs(err) < 1e-12))),
        "n_at_0_or_1": int(exact_ends.sum()),
    }


# -- 2. planted copies -------------------------------------------------------------------------
def reformat(words, rng):
    out = []
    for w in words:
        w = w.upper() if rng.random() < 0.3 else w
        out.append(
            w + rng.choice(["", ",", ".", ";", ":", "!"], p=[0.6, 0.1, 0.1, 0.1, 0.05, 0.05])
        )
    return rng.choice([" ", "  ", "\n", "\t"]).join(out)


def paraphrase(words, share, rng):
    words = list(words)
    for j in rng.choice(len(words), size=int(round(share * len(words))), replace=False):
        words[j] = f"p{rng.integers(10**9)}"
    return " ".join(words)


def planted_rates(n_items=2000, n_background=20_000, per_kind=100, seed=1):
    rng = np.random.default_rng(seed)
    words = [zipf_words(rng, int(rng.integers(40, 120))) for _ in range(n_items)]
    items = {i: " ".join(w) for i, w in enumerate(words)}
    kinds = [
        "exact",
        "reformatted",
        "reformatted, embedded",
        "paraphrase 10%",
        "paraphrase 20%",
        "paraphrase 30%",
    ]
    planted, docs = {}, []
    chosen = rng.permutation(n_items)[: per_kind * len(kinds)]
    for k, kind in enumerate(kinds):
        for i in chosen[k * per_kind : (k + 1) * per_kind]:
            w = words[i]
            if kind == "exact":
                text = items[i]
            elif kind == "reformatted":
                text = reformat(w, rng)
            elif kind == "reformatted, embedded":
                text = (
                    " ".join(zipf_words(rng, 150))
                    + " "
                    + reformat(w, rng)
                    + " "
                    + " ".join(zipf_words(rng, 150))
                )
            else:
                text = paraphrase(w, int(kind.split()[1][:-1]) / 100, rng)
            docs.append(text)
            planted[i] = kind
    background = [text for _, text in corpus_stream(n_background, seed + 1)]
    corpus = docs + background
    order = rng.permutation(len(corpus))
    out = overlap(items, (corpus[j] for j in order))
    result = {}
    for kind in kinds:
        rows = out.loc[[i for i, k in planted.items() if k == kind]]
        result[kind] = {
            "found": float((rows["label"] != "none").mean()),
            "confirmed": float((rows["label"] == "confirmed").mean()),
            "minhash_found": float((rows["minhash_jaccard"] >= 0.5).mean()),
            "median_containment": float(rows["containment"].median()),
        }
    clean = out.drop(index=list(planted))
    result["clean items"] = {
        "found": float((clean["label"] != "none").mean()),
        "confirmed": float((clean["label"] == "confirmed").mean()),
        "minhash_found": float((clean["minhash_jaccard"] >= 0.5).mean()),
        "median_containment": float(clean["containment"].median()),
    }
    return {"items": n_items, "corpus": len(corpus), "per_kind": per_kind, "rates": result}


# -- 3. scale ----------------------------------------------------------------------------------
def scale_child(n_items, n_docs):
    rng = np.random.default_rng(7)
    items = {i: " ".join(zipf_words(rng, 60)) for i in range(n_items)}
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    out = overlap(items, corpus_stream(n_docs, seed=11))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "items": n_items,
                "docs": n_docs,
                "seconds": seconds,
                "peak_rss_mb": peak / 1024,
                "rss_before_mb": base / 1024,
                "labels": out["label"].value_counts().to_dict(),
                "n_documents": out.attrs["n_documents"],
            }
        )
    )


def scale(n_items, sizes, budget):
    rows, spent = [], 0.0
    for n_docs in sizes:
        if rows:  # predicted from the last size: skip what would overrun the budget
            predicted = rows[-1]["seconds"] * n_docs / rows[-1]["docs"]
            if spent + predicted > budget:
                rows.append({"docs": n_docs, "skipped": True, "predicted_seconds": predicted})
                continue
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(n_items), str(n_docs)],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(done.stdout.strip().splitlines()[-1])
        spent += row["seconds"]
        rows.append(row)
    return rows


# -- 4. compare_subsets coverage ---------------------------------------------------------------
def subsets_coverage(n_sims, n_tasks=40, n_trials=20, lift=0.25, seed=2024):
    import bayeval as be
    from bayeval.contamination import compare_subsets

    rng = np.random.default_rng(seed)
    hits = {True: [], False: []}
    bias = {True: [], False: []}
    for i in range(n_sims):
        p = rng.beta(2, 5, n_tasks)
        flagged = np.zeros(n_tasks, bool)
        flagged[rng.choice(n_tasks, n_tasks // 3, replace=False)] = True
        p[flagged] = np.clip(p[flagged] + lift, 0, 1)
        truth = p[flagged].mean() - p[~flagged].mean()
        data = be.from_counts(rng.binomial(n_trials, p), trials=n_trials)
        fit = be.fit(data, model="hierarchical", draws=500, chains=2, seed=i, log_likelihood=False)
        for refit in (True, False):
            extra = {"log_likelihood": False} if refit else {}
            out = compare_subsets(fit, flagged, estimand="tasks", refit=refit, **extra)
            lo, hi = out["difference_interval"].values[0]
            hits[refit].append(lo <= truth <= hi)
            bias[refit].append(float(out["difference_mean"].values[0]) - truth)
    return {
        "sims": n_sims,
        "tasks": n_tasks,
        "trials": n_trials,
        "lift": lift,
        **{
            ("refit" if r else "joint draws"): {
                "coverage": float(np.mean(hits[r])),
                "bias": float(np.mean(bias[r])),
                "mc_se": float(np.sqrt(0.95 * 0.05 / n_sims)),
            }
            for r in (True, False)
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000, 300_000, 1_000_000]
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument(
        "--budget", type=float, default=300.0, help="seconds for the scale runs together"
    )
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "overlap.txt"))
    parser.add_argument("--child", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        scale_child(*args.child)
        return
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    say("bayeval.contamination.overlap and compare_subsets benchmark")
    say(f"python {sys.version.split()[0]}; generated text; {time.strftime('%Y-%m-%d')}")
    say()
    acc = minhash_accuracy()
    say(
        f"1. MinHash (num_perm={acc['num_perm']}) vs exact 3-shingle Jaccard, {acc['pairs']} "
        "pairs with Jaccard spread over [0, 1]"
    )
    say(
        f"   mean |error| {acc['mean_abs_error']:.4f}, max {acc['max_abs_error']:.4f} "
        f"(stated bound 0.5/sqrt(num_perm) = {0.5 / np.sqrt(acc['num_perm']):.4f} per SE), "
        f"bias {acc['bias']:+.4f}"
    )
    say(
        f"   within 1 SE: {acc['share_within_1se']:.3f} (normal: 0.683); within 2 SE: "
        f"{acc['share_within_2se']:.3f} (normal: 0.954); exact at J = 0 or 1: "
        f"{acc['exact_at_0_or_1']} of {acc['n_at_0_or_1']}"
    )
    say()
    t0 = time.perf_counter()
    planted = planted_rates()
    say(
        f"2. Planted copies: {planted['items']} items, {planted['corpus']} documents, "
        f"{planted['per_kind']} copies of each kind (defaults: confirmed containment >= 0.8, "
        "suspected >= 0.5, MinHash >= 0.5) "
        f"[{time.perf_counter() - t0:.1f} s]"
    )
    say(
        f"   {'kind':24s} {'found':>7s} {'confirmed':>10s} {'minhash>=.5':>12s} "
        f"{'median containment':>19s}"
    )
    for kind, r in planted["rates"].items():
        say(
            f"   {kind:24s} {r['found']:7.2f} {r['confirmed']:10.2f} {r['minhash_found']:12.2f} "
            f"{r['median_containment']:19.3f}"
        )
    say()
    say(
        f"3. Scale: {args.items} items (60 words) against generated corpora (100 words per "
        "document, Zipf vocabulary), all four methods, one process per size"
    )
    rows = scale(args.items, args.sizes, args.budget)
    say(
        f"   {'documents':>10s} {'seconds':>9s} {'docs/s':>8s} {'peak RSS MB':>12s} "
        f"{'RSS before MB':>14s}"
    )
    for row in rows:
        if row.get("skipped"):
            say(
                f"   {row['docs']:10d} skipped: predicted {row['predicted_seconds']:.0f} s "
                "from the last size's rate (beyond the time budget)"
            )
        else:
            say(
                f"   {row['docs']:10d} {row['seconds']:9.1f} {row['docs'] / row['seconds']:8.0f} "
                f"{row['peak_rss_mb']:12.0f} {row['rss_before_mb']:14.0f}"
            )
    done = [r for r in rows if not r.get("skipped")]
    if len(done) >= 2:
        slope = np.polyfit(
            np.log([r["docs"] for r in done]), np.log([r["seconds"] for r in done]), 1
        )[0]
        rate = done[-1]["docs"] / done[-1]["seconds"]
        say(
            f"   time grows as documents^{slope:.2f}; at the largest size's rate "
            f"({rate:.0f} docs/s) 1,000,000 documents take {1e6 / rate:.0f} s"
        )
    say()
    t0 = time.perf_counter()
    cov = subsets_coverage(args.sims)
    say(
        f"4. compare_subsets, flagged - clean (tasks estimand), {cov['sims']} simulations: "
        f"{cov['tasks']} tasks, a third lifted by {cov['lift']}, {cov['trials']} trials, "
        f"hierarchical [{time.perf_counter() - t0:.1f} s]"
    )
    for name in ("refit", "joint draws"):
        r = cov[name]
        say(
            f"   {name:12s} coverage of the 95% interval {r['coverage']:.2f} "
            f"(MC se {r['mc_se']:.3f}), bias {r['bias']:+.4f}"
        )
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
