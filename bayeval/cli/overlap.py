"""``bayeval overlap``: evidence that evaluation items overlap a training corpus."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import click
import pandas as pd

from bayeval._io import check_text_head
from bayeval.cli._group import InputError, command_line, contamination
from bayeval.cli._output import check_outputs, write_json
from bayeval.readers.table import load_table


def _corpus_documents(path: Path, text_field: str):
    """Stream a corpus: a .jsonl of records or plain text, one document per line.

    Records carry ``text_field`` and an optional ``id``; gzip is read when the name ends in .gz.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    jsonl = ".jsonl" in path.suffixes
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            if not jsonl:
                yield f"{path.name}:{line_no}", line.rstrip("\n")
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {line_no} is not JSON ({exc.msg})") from None
            if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                raise InputError(
                    f"{path}: line {line_no} has no text field {text_field!r} "
                    "(--corpus-text-field names it)"
                )
            yield record.get("id", f"{path.name}:{line_no}"), record[text_field]


def _installed_methods() -> tuple[str, ...]:
    """Every method whose dependency is installed; a note says what the extra would add."""
    # find_spec, not an import: datasketch is imported by the check that uses it
    if importlib.util.find_spec("datasketch") is not None:
        return ("exact", "normalized", "shingle", "minhash")
    click.echo(
        "note: checking with exact, normalized and shingle; minhash (a MinHash LSH "
        "estimate of the Jaccard similarity, which also marks near-duplicate documents as "
        "suspected) needs bayeval[contamination] (pip install 'bayeval[contamination]')",
        err=True,
    )
    return ("exact", "normalized", "shingle")


@click.command(context_settings={"max_content_width": 100})
@click.argument("items", type=click.Path(exists=True, dir_okay=False))
@click.argument("corpus", type=click.Path(exists=True, dir_okay=False))
@click.option("--id-column", default="id", show_default=True, help="Item id column of ITEMS.")
@click.option("--text-column", default="text", show_default=True, help="Item text column of ITEMS.")
@click.option(
    "--corpus-text-field",
    default="text",
    show_default=True,
    help="Text field of a .jsonl corpus (plain text: one document per line).",
)
@click.option(
    "--methods",
    help="Comma-separated: exact, normalized, shingle, minhash (bayeval[contamination]). "
    "[default: exact,normalized,shingle, and minhash where bayeval[contamination] is "
    "installed]",
)
@click.option(
    "--json",
    "json_path",
    metavar="PATH",
    help="Write every item's evidence as JSON ('-': standard output).",
)
def overlap(items, corpus, id_column, text_column, corpus_text_field, methods, json_path):
    """Evidence that evaluation ITEMS overlap a training CORPUS (contamination).

    ITEMS is a table (.csv, .jsonl, .parquet) with an id and a text column; CORPUS is a
    .jsonl of records or a plain-text file with one document per line (streamed, never held
    whole). Each item is labelled confirmed, suspected or none with its scores and the
    thresholds used. No overlap found is not proof of absence.

    \b
    Examples:
      bayeval overlap items.csv corpus.jsonl
      bayeval overlap items.jsonl corpus.txt --methods exact,normalized,shingle --json out.json
    """  # noqa: D301 - click's no-rewrap mark "\b" is a backspace; r""" would break it
    check_outputs(json_path)
    check_text_head(  # a binary corpus is refused now, not after the items are read
        corpus,
        reader="bayeval overlap",
        expected="a text or JSON-lines corpus",
        opener=gzip.open if Path(corpus).suffix == ".gz" else None,
    )
    frame = load_table(items, reader="bayeval")
    for role, column in (("--id-column", id_column), ("--text-column", text_column)):
        if column not in frame.columns:
            raise click.BadParameter(
                f"{items} has no column {column!r}; columns: {', '.join(map(str, frame.columns))}",
                param_hint=role,
            )
    texts = pd.Series(frame[text_column].to_numpy(), index=frame[id_column].to_numpy())
    if methods is None:
        chosen = _installed_methods()
    else:
        chosen = tuple(m.strip() for m in methods.split(",") if m.strip())
    click.echo(
        f"checking {len(texts)} item(s) against {corpus} ({', '.join(chosen)}) ...", err=True
    )
    table = contamination.overlap(
        texts, _corpus_documents(Path(corpus), corpus_text_field), methods=chosen
    )
    counts = table["label"].value_counts().reindex(["confirmed", "suspected", "none"], fill_value=0)
    if json_path != "-":
        click.echo(", ".join(f"{label}: {int(n)}" for label, n in counts.items()))
        flagged = table[table["label"] != "none"]
        if len(flagged):
            with pd.option_context(
                "display.width", 250, "display.max_columns", None, "display.max_rows", 200
            ):
                click.echo(flagged.to_string())
        for note in (
            table.attrs.get("limits", ())
            if isinstance(table.attrs.get("limits"), (list, tuple))
            else [table.attrs.get("limits")]
        ):
            if note:
                click.echo(f"note: {note}", err=True)
    if json_path:
        write_json(
            {
                "counts": {k: int(v) for k, v in counts.items()},
                "items": json.loads(table.reset_index().to_json(orient="records")),
                "settings": {
                    k: v
                    for k, v in table.attrs.items()
                    if isinstance(v, (str, int, float, list, dict))
                },
                "command": command_line(),
            },
            json_path,
        )
