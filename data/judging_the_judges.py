"""Rebuild ``judging_the_judges_triviaqa.csv`` from the study's published results file.

Source: GitHub ``UMass-Meta-LLM-Eval/llm_eval`` at commit
7c0bf28e75703cd41c6088bebb64eefcdf348bd4, file
``results/TriviaQA_Judges_w_HumanJudgement_V1.csv`` (git blob 85bd7912), the per-answer
verdicts of "Judging the Judges" (Thakur et al., 2024): 9 exam-taker models x 400 TriviaQA
questions, the verdicts of 11 judges and a human label on every answer.

The subset keeps every exam-taker, the 395 questions that all nine answered once, three
judges (GPT-4 Turbo, Llama-3 70B and the lexical ``Contains``) and the human label, as 0/1.
Questions are identified by the first 10 hex digits of the SHA-1 of their text (UTF-8), so a
row can be joined back to the source; question texts, references and responses are left out.
The source gives ``llama2-7b-chat`` five questions twice (rows 1600-1604 repeat them with no
judge verdicts; the repeats are dropped) and so lacks five others: those five questions are
left out for every exam-taker.

Run: ``python data/judging_the_judges.py SOURCE.csv data/judging_the_judges_triviaqa.csv``
"""

from __future__ import annotations

import hashlib
import sys

import pandas as pd

JUDGES = {"GPT-4": "judge_gpt4", "Llama3-70B": "judge_llama3_70b", "Contains": "judge_contains"}


def build(source: str) -> pd.DataFrame:
    """The subset (system, task, three judges' verdicts, human label) of the source file."""
    raw = pd.read_csv(source)
    # the study's 400 questions, each answered once by every exam-taker: drop the repeats
    # that carry no judge verdict, and the questions they displaced
    unjudged = raw[list(JUDGES)].isna().all(axis=1)
    repeat = raw.duplicated(["model", "question"], keep=False) & unjudged
    kept = raw[~repeat]
    if kept.duplicated(["model", "question"]).any():
        raise ValueError("a question is answered twice with verdicts: the source changed")
    answered = kept.groupby("question")["model"].nunique()
    common = answered[answered == raw["model"].nunique()].index
    rows = kept[kept["question"].isin(common)]
    out = pd.DataFrame(
        {
            "system": rows["model"],
            "task": [hashlib.sha1(q.encode()).hexdigest()[:10] for q in rows["question"]],
            **{new: rows[old].astype(bool).astype(int) for old, new in JUDGES.items()},
            "human": rows["HumanJudgement"].astype(bool).astype(int),
        }
    )
    for old in (*JUDGES, "HumanJudgement"):
        if rows[old].isna().any():
            raise ValueError(f"column {old!r} has missing verdicts in the subset")
    if out["task"].nunique() != len(common):
        raise ValueError("two questions share a hash prefix: lengthen it")
    return out.reset_index(drop=True)


if __name__ == "__main__":
    build(sys.argv[1]).to_csv(sys.argv[2], index=False)
