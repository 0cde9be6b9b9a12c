"""Evidence that evaluation items overlap a training corpus, and what it does to the number.

:func:`overlap` streams a corpus past an index of the evaluation items and reports, per item,
exact and normalised whole-document matches, word n-gram (shingle) Jaccard and containment, and
MinHash LSH estimates (the ``contamination`` extra, ``datasketch``), with a label
(``confirmed`` / ``suspected`` / ``none``), the scores and the thresholds used. Memory grows
with the items, never with the corpus.

:func:`compare_subsets` (:mod:`bayeval.analyses.subsets`) reads a fitted
:class:`~bayeval.Results` on clean versus flagged tasks (tasks are the random units): the score
on each subset, their difference, and how much the flagged tasks move the reported number.
:func:`leakage_audit` does it for several declared channels of leakage at once.

Limits
------
No overlap found is not proof of absence. The methods see only the corpus they are given, and
only surface overlap of words: a translation, a paraphrase in other words or a solution
rewritten in another style shares few n-grams. MinHash estimates Jaccard similarity, not
containment, so it misses a short item embedded in a much longer document (the exact shingle
containment does not).
"""

from __future__ import annotations

import numbers
import re
import unicodedata
import zlib
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from bayeval._validate import describe_values, validate_choice
from bayeval.analyses.subsets import compare_subsets

__all__ = [
    "METHODS",
    "NORMALIZATION",
    "LIMITS",
    "normalize",
    "shingles",
    "overlap",
    "compare_subsets",
    "leakage_audit",
]

METHODS = ("exact", "normalized", "shingle", "minhash")
NORMALIZATION = (
    "Unicode NFKC, case folded; every character that is not a letter, a digit or "
    "whitespace (punctuation, symbols, underscores) becomes a space; runs of "
    "whitespace become one space; leading and trailing whitespace removed"
)
LIMITS = (
    "No overlap found is not proof of absence: only the corpus given was searched, and only "
    "for surface overlap of words (a translation, a paraphrase in other words or a rewritten "
    "solution shares few n-grams). An item with fewer words than the n-gram size has no "
    "shingles (its shingle scores are NaN). MinHash estimates Jaccard similarity with standard "
    "error sqrt(J(1 - J) / num_perm) and LSH returns a pair of Jaccard J with probability "
    "1 - (1 - J**r)**b; it does not estimate containment, so it misses an item embedded in a "
    "much longer document (the exact shingle containment does not)."
)
_NOT_WORD = re.compile(r"[^\w\s]|_")
_EXTRA_HELP = (
    "MinHash needs the datasketch package: pip install 'bayeval[contamination]'; "
    "the methods 'exact', 'normalized' and 'shingle' work without it"
)


def normalize(text: str) -> str:
    r"""The text as the ``normalized`` method compares it (see :data:`NORMALIZATION`).

    Examples
    --------
    >>> from bayeval.contamination import normalize
    >>> normalize("  Def add(a, b):\n\treturn a+b  ")
    'def add a b return a b'
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NOT_WORD.sub(" ", text).split())


def shingles(text: str, n: int = 3) -> set:
    """The word ``n``-grams of the normalised text (empty when it has fewer than ``n`` words).

    Examples
    --------
    >>> from bayeval.contamination import shingles
    >>> sorted(shingles("The cat sat, on the mat."))
    ['cat sat on', 'on the mat', 'sat on the', 'the cat sat']
    """
    words = normalize(text).split()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def _threshold(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) <= 1:
        raise ValueError(f"{name} must be a number in (0, 1]; got {value!r}")
    return float(value)


def _items(items) -> tuple[list, list]:
    if isinstance(items, pd.Series):
        ids, texts = items.index.tolist(), items.tolist()
    elif isinstance(items, Mapping):
        ids, texts = list(items.keys()), list(items.values())
    elif isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(
            "items must be a mapping of id -> text, a pandas Series (indexed by "
            f"item id) or a list of texts; got {type(items).__name__}"
        )
    else:
        texts = list(items)
        ids = list(range(len(texts)))
    if not texts:
        raise ValueError("items is empty; nothing to check")
    bad = [i for i, t in zip(ids, texts, strict=True) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"items must be texts (str); items {describe_values(bad)} are not")
    empty = [i for i, t in zip(ids, texts, strict=True) if not t.strip()]
    if empty:
        raise ValueError(
            f"items {describe_values(empty)} are empty: an empty text has no "
            "evidence to give; remove them or give their text"
        )
    if len(set(map(repr, ids))) != len(ids):
        raise ValueError("item ids must be distinct")
    return ids, texts


def _documents(corpus):
    """``(doc_id, text)`` pairs, one at a time (the corpus is never held whole)."""
    if isinstance(corpus, (str, bytes)):
        raise TypeError(
            "corpus must be an iterable of documents, not one string (iterating a "
            "string gives characters); wrap one document in a list"
        )
    if isinstance(corpus, (pd.Series, Mapping)):
        source = iter(corpus.items())
        keyed = True
    elif isinstance(corpus, Iterable):
        source = iter(corpus)
        keyed = None
    else:
        raise TypeError(
            "corpus must be an iterable of texts or of (doc_id, text) pairs; got "
            f"{type(corpus).__name__}"
        )
    for position, doc in enumerate(source):
        if keyed or (isinstance(doc, tuple) and len(doc) == 2):
            doc_id, text = doc
        else:
            doc_id, text = position, doc
        if not isinstance(text, str):
            raise TypeError(
                f"corpus document {doc_id!r} (position {position}) is a "
                f"{type(text).__name__}, not a text (str); give texts or "
                "(doc_id, text) pairs"
            )
        yield doc_id, text


class _MinHashIndex:
    """Items in a MinHash LSH index; documents queried one at a time."""

    def __init__(self, shingle_sets, threshold, num_perm, seed):
        try:
            import datasketch
        except ImportError:
            raise ImportError(_EXTRA_HELP) from None
        self._ds = datasketch
        template = datasketch.MinHash(num_perm=num_perm, seed=seed)
        self._options = dict(
            num_perm=num_perm,
            seed=seed,
            permutations=template.permutations,
            scheme=template.scheme,
            hashfunc=zlib.crc32,
        )
        self.lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm)
        self.signatures = {}
        for i, grams in enumerate(shingle_sets):
            if grams:
                self.signatures[i] = self.signature(grams)
                self.lsh.insert(i, self.signatures[i])

    def signature(self, grams):
        m = self._ds.MinHash(**self._options)
        m.update_batch([g.encode("utf-8") for g in grams])
        return m

    def query(self, grams):
        """``(item, estimated Jaccard)`` for the LSH candidates of a document."""
        m = self.signature(grams)
        return [(i, m.jaccard(self.signatures[i])) for i in self.lsh.query(m)]


def overlap(
    items,
    corpus,
    methods=METHODS,
    *,
    ngram: int = 3,
    confirmed_containment: float = 0.8,
    suspected_containment: float = 0.5,
    minhash_threshold: float = 0.5,
    num_perm: int = 128,
    seed: int = 1,
    chunk_size: int = 1000,
) -> pd.DataFrame:
    """Per evaluation item, the evidence that it overlaps a training corpus.

    The items are indexed once; the corpus is read one document at a time (``chunk_size``
    documents at a time for the shingle method), so memory grows with the items, not the
    corpus.

    The methods:

    ===============  ==============================================================
    ``exact``        the item's text equals a whole document;
    ``normalized``   equal after normalisation (:data:`NORMALIZATION`: case, whitespace,
                     punctuation);
    ``shingle``      word ``ngram``-grams of the normalised texts: for the document with the
                     largest score, Jaccard ``|I & D| / |I | D|`` and containment
                     ``|I & D| / |I|`` (the share of the item's n-grams found in one document;
                     it finds an item embedded in a longer document, which Jaccard does not);
                     exact, over every document that shares an n-gram;
    ``minhash``      MinHash LSH (``datasketch``, the ``contamination`` extra) over the same
                     n-grams: the largest estimated Jaccard among the documents LSH returns.
    ===============  ==============================================================

    The labels:

    =============  ================================================================
    ``confirmed``  an exact or normalised match, or containment >= ``confirmed_containment``;
    ``suspected``  otherwise, containment >= ``suspected_containment`` or a MinHash estimate
                   >= ``minhash_threshold`` (an estimate alone never confirms);
    ``none``       no method found overlap above its threshold. This is not proof of absence
                   (:data:`LIMITS`).
    =============  ================================================================

    Parameters
    ----------
    items : mapping of id -> text, pandas.Series of texts, or list of texts
    corpus : iterable of texts, of ``(doc_id, text)`` pairs, a mapping or a Series
        Streamed; a generator reading files line by line is fine. Document ids default to
        positions.
    methods : sequence of str, default all four
    ngram : int, default 3
        Words per shingle.
    confirmed_containment, suspected_containment : float, default 0.8 and 0.5
        Containment thresholds. With a share ``q`` of an item's words replaced, about
        ``(1 - q) ** 3`` of its 3-grams survive: a copy with 10% of its words changed keeps
        about 0.73 (suspected), one with 20% about 0.51.
    minhash_threshold : float, default 0.5
        The LSH index's Jaccard threshold and the label's.
    num_perm, seed : int, default 128 and 1
        MinHash permutations (the estimate's standard error is at most ``0.5 / sqrt(num_perm)``,
        0.044 at 128) and their seed.
    chunk_size : int, default 1000
        Documents matched against the shingle index at once.

    Returns
    -------
    pandas.DataFrame
        One row per item (index: item id, in the given order): ``label``, ``evidence`` (the
        methods above their thresholds), ``n_shingles``, and per method its columns:
        ``exact``/``exact_doc``, ``normalized``/``normalized_doc``, ``jaccard``/``jaccard_doc``,
        ``containment``/``containment_doc`` (0 when no document shares an n-gram, NaN for an
        item without shingles), ``minhash_jaccard``/``minhash_doc`` (NaN when LSH returned no
        document). A ``*_doc`` column names the first document with the largest score (None
        when there is none). ``attrs`` hold the methods, thresholds, normalisation, the
        number of documents read, the LSH bands and rows, and the limits.

    Raises
    ------
    ImportError
        ``"minhash"`` without ``datasketch`` (install ``bayeval[contamination]``).

    Examples
    --------
    >>> from bayeval.contamination import overlap
    >>> items = {"q1": "What is the capital of France? Answer: Paris.",
    ...          "q2": "Sum the even numbers below one hundred and print the result."}
    >>> corpus = ["Trivia night. what is the capital of france answer paris and more",
    ...           "Unrelated text about gardening and tomatoes."]
    >>> out = overlap(items, corpus, methods=("exact", "normalized", "shingle"))
    >>> out["label"].tolist(), out["containment"].tolist(), out["containment_doc"].tolist()
    (['confirmed', 'none'], [1.0, 0.0], [0, None])
    """
    methods = _methods(methods)
    if isinstance(ngram, bool) or not isinstance(ngram, numbers.Integral) or ngram < 1:
        raise ValueError(f"ngram must be a positive integer; got {ngram!r}")
    confirmed_containment = _threshold("confirmed_containment", confirmed_containment)
    suspected_containment = _threshold("suspected_containment", suspected_containment)
    minhash_threshold = _threshold("minhash_threshold", minhash_threshold)
    if suspected_containment > confirmed_containment:
        raise ValueError(
            f"suspected_containment ({suspected_containment}) must not exceed "
            f"confirmed_containment ({confirmed_containment})"
        )
    for name, value in (("num_perm", num_perm), ("chunk_size", chunk_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}")
    ids, texts = _items(items)
    n_items = len(ids)
    normalized = [normalize(t) for t in texts]
    grams = [_grams(t.split(), ngram) for t in normalized]
    minhash = (
        _MinHashIndex(grams, minhash_threshold, int(num_perm), seed)
        if "minhash" in methods
        else None
    )

    exact_index, norm_index = {}, {}
    for i, (text, norm) in enumerate(zip(texts, normalized, strict=True)):
        exact_index.setdefault(text, []).append(i)
        if norm:
            norm_index.setdefault(norm, []).append(i)
    item_size = np.array([len(g) for g in grams], dtype=np.int64)
    keys = np.fromiter(
        (hash(g) for gs in grams for g in gs), dtype=np.int64, count=int(item_size.sum())
    )
    owner = np.repeat(np.arange(n_items, dtype=np.int64), item_size)
    order = np.argsort(keys, kind="stable")
    keys, owner = keys[order], owner[order]

    found = {"exact": [None] * n_items, "normalized": [None] * n_items}
    best = {name: np.zeros(n_items) for name in ("jaccard", "containment", "minhash")}
    best_doc = {name: [None] * n_items for name in best}
    state = _ShingleState(keys, owner, item_size, best, best_doc)
    n_docs = 0
    for doc_id, text in _documents(corpus):
        n_docs += 1
        if "exact" in methods:
            for i in exact_index.get(text, ()):
                if found["exact"][i] is None:
                    found["exact"][i] = (doc_id,)
        norm = normalize(text)
        if "normalized" in methods:
            for i in norm_index.get(norm, ()):
                if found["normalized"][i] is None:
                    found["normalized"][i] = (doc_id,)
        if "shingle" in methods or minhash is not None:
            doc_grams = _grams(norm.split(), ngram)
            if "shingle" in methods:
                state.add(doc_id, doc_grams)
                if len(state.docs) >= chunk_size:
                    state.flush()
            if minhash is not None and doc_grams:
                for i, estimate in minhash.query(doc_grams):
                    if estimate > best["minhash"][i]:
                        best["minhash"][i], best_doc["minhash"][i] = estimate, doc_id
    state.flush()
    return _overlap_frame(
        ids,
        methods,
        found,
        best,
        best_doc,
        item_size,
        minhash,
        n_docs,
        dict(
            ngram=int(ngram),
            confirmed_containment=confirmed_containment,
            suspected_containment=suspected_containment,
            minhash_threshold=minhash_threshold,
            num_perm=int(num_perm),
            seed=seed,
        ),
    )


def _methods(methods) -> tuple:
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    if not methods:
        raise ValueError(f"methods must name at least one of {list(METHODS)}")
    for m in methods:
        validate_choice("methods", m, METHODS)
    return methods


def _grams(words: list, n: int) -> set:
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


class _ShingleState:
    """Exact shingle intersections of a chunk of documents with every item, vectorised."""

    def __init__(self, keys, owner, item_size, best, best_doc):
        self.keys, self.owner, self.item_size = keys, owner, item_size
        self.best, self.best_doc = best, best_doc
        self.docs, self.hashes, self.sizes = [], [], []

    def add(self, doc_id, grams) -> None:
        self.docs.append(doc_id)
        self.hashes.append(np.fromiter((hash(g) for g in grams), dtype=np.int64, count=len(grams)))
        self.sizes.append(len(grams))

    def flush(self) -> None:
        if not self.docs or not len(self.keys):
            self.docs, self.hashes, self.sizes = [], [], []
            return
        hashes = np.concatenate(self.hashes)
        sizes = np.asarray(self.sizes, dtype=np.int64)
        doc = np.repeat(np.arange(len(sizes)), sizes)
        lo = np.searchsorted(self.keys, hashes, "left")
        count = np.searchsorted(self.keys, hashes, "right") - lo
        hit = count > 0
        if hit.any():
            lo, count, doc = lo[hit], count[hit], doc[hit]
            start = np.repeat(lo - (np.cumsum(count) - count), count)
            rows = start + np.arange(int(count.sum()))
            n_items = len(self.item_size)
            pairs = np.repeat(doc, count) * n_items + self.owner[rows]
            pairs, inter = np.unique(pairs, return_counts=True)
            d, i = pairs // n_items, pairs % n_items
            scores = {
                "containment": inter / self.item_size[i],
                "jaccard": inter / (self.item_size[i] + sizes[d] - inter),
            }
            for name, score in scores.items():
                order = np.lexsort((-d, score, i))  # per item: largest score, first document
                last = np.r_[i[order][1:] != i[order][:-1], True]
                top_i, top_d, top = i[order][last], d[order][last], score[order][last]
                better = top > self.best[name][top_i]
                for item, dd, value in zip(top_i[better], top_d[better], top[better], strict=True):
                    self.best[name][item] = value
                    self.best_doc[name][item] = self.docs[dd]
        self.docs, self.hashes, self.sizes = [], [], []


def _overlap_frame(ids, methods, found, best, best_doc, item_size, minhash, n_docs, settings):
    n = len(ids)
    frame = pd.DataFrame(index=pd.Index(ids, name="item"))
    has_grams = item_size > 0
    confirmed = np.zeros(n, bool)
    suspected = np.zeros(n, bool)
    evidence = [[] for _ in range(n)]
    for name in ("exact", "normalized"):
        if name in methods:
            hit = np.array([f is not None for f in found[name]])
            frame[name] = hit
            frame[f"{name}_doc"] = pd.Series(
                [f[0] if f else None for f in found[name]], index=frame.index, dtype=object
            )
            confirmed |= hit
            for i in np.flatnonzero(hit):
                evidence[i].append(name)
    frame["n_shingles"] = item_size
    if "shingle" in methods:
        for name in ("jaccard", "containment"):
            frame[name] = np.where(has_grams, best[name], np.nan)
            frame[f"{name}_doc"] = pd.Series(best_doc[name], index=frame.index, dtype=object)
        containment = frame["containment"].fillna(0).to_numpy()
        strong = containment >= settings["confirmed_containment"]
        weak = containment >= settings["suspected_containment"]
        confirmed |= strong
        suspected |= weak
        for i in np.flatnonzero(weak):
            evidence[i].append(f"containment {containment[i]:.2f}")
    if minhash is not None:
        values = np.array(
            [best["minhash"][i] if best_doc["minhash"][i] is not None else np.nan for i in range(n)]
        )
        frame["minhash_jaccard"] = values
        frame["minhash_doc"] = pd.Series(best_doc["minhash"], index=frame.index, dtype=object)
        high = np.nan_to_num(values) >= settings["minhash_threshold"]
        suspected |= high
        for i in np.flatnonzero(high):
            evidence[i].append(f"minhash {values[i]:.2f}")
    label = np.where(confirmed, "confirmed", np.where(suspected, "suspected", "none"))
    frame.insert(0, "label", label)
    frame.insert(1, "evidence", ["; ".join(e) for e in evidence])
    frame.attrs = {
        "methods": list(methods),
        **settings,
        "normalization": NORMALIZATION,
        "n_documents": n_docs,
        "n_items_without_shingles": int((~has_grams).sum()),
        "limits": LIMITS,
    }
    if minhash is not None:
        frame.attrs.update(lsh_bands=int(minhash.lsh.b), lsh_rows=int(minhash.lsh.r))
    return frame


# -- what contamination does to the number -----------------------------------------------------
def leakage_audit(
    results,
    channels: Mapping,
    metric: str = "pass@k",
    k: int = 1,
    estimand: str = "population",
    ci_prob: float = 0.95,
    **options,
) -> pd.DataFrame:
    """For each declared channel of leakage, whether its tasks move the number.

    Each channel is a mask over the tasks (as in :func:`compare_subsets`): the tasks exposed
    through that channel (a leaked solution, a training episode carrying the test's function
    names, an evaluation item found in the corpus...).

    Returns
    -------
    pandas.DataFrame
        One row per channel and system: ``n_flagged``, ``n_clean``, the means of ``all``,
        ``clean`` and ``flagged``, ``difference`` (flagged - clean) with its interval and
        ``prob_flagged_higher``, ``inflation`` (all - clean) with its interval, and ``moves``:
        whether the ``ci_prob`` interval of the inflation excludes zero. Settings in attrs.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.contamination import leakage_audit
    >>> data = be.from_counts([9, 10, 8, 2, 3, 1, 4, 2], trials=10)
    >>> res = be.fit(data, model="hierarchical", draws=500, chains=2, seed=0)
    >>> audit = leakage_audit(res, {"solutions": [0, 1, 2], "names": [0, 3]})
    >>> audit[["channel", "system", "moves"]].values.tolist()
    [['solutions', 'system', True], ['names', 'system', False]]
    """
    if not isinstance(channels, Mapping) or not channels:
        raise TypeError("channels must be a non-empty mapping of channel name -> mask")
    rows = []
    for channel, mask in channels.items():
        try:
            out = compare_subsets(
                results, mask, metric=metric, k=k, estimand=estimand, ci_prob=ci_prob, **options
            )
        except (TypeError, ValueError) as error:
            raise type(error)(f"channel {channel!r}: {error}") from None
        if "missing_bound" in out.dims:
            raise ValueError(
                "leakage_audit reads one number per channel and system; under "
                "missing='bounds' use compare_subsets, which keeps both bounds"
            )
        for system in out["system"].values.tolist():
            sel = out.sel(system=system)
            means = sel["score_mean"]
            lo_d, hi_d = sel["difference_interval"].values
            lo_i, hi_i = sel["inflation_interval"].values
            rows.append(
                {
                    "channel": channel,
                    "system": system,
                    "n_flagged": out.attrs["n_flagged"],
                    "n_clean": out.attrs["n_clean"],
                    "all": float(means.sel(subset="all")),
                    "clean": float(means.sel(subset="clean")),
                    "flagged": float(means.sel(subset="flagged")),
                    "difference": float(sel["difference_mean"]),
                    "difference_lower": float(lo_d),
                    "difference_upper": float(hi_d),
                    "prob_flagged_higher": float(sel["prob_flagged_higher"]),
                    "inflation": float(sel["inflation_mean"]),
                    "inflation_lower": float(lo_i),
                    "inflation_upper": float(hi_i),
                    "moves": bool(lo_i > 0 or hi_i < 0),
                }
            )
    frame = pd.DataFrame(rows)
    frame.attrs = {
        "metric": metric,
        "k": int(k),
        "estimand": estimand,
        "ci_prob": ci_prob,
        "moves_rule": f"the {ci_prob:g} interval of all - clean excludes 0",
    }
    return frame
