"""bayeval.readers.read and detect_format on folders: every format in a folder is accounted for.

The folders are assembled here from genuine fixtures (provenance:
``tests/fixtures/readers/PROVENANCE.md``); what each holds is listed from the files themselves.
"""

import shutil

import pytest

import bayeval.readers as br
from tests import helpers

FIXTURES = helpers.FIXTURES / "readers"
QWEN = FIXTURES / "lm_eval_results" / "Qwen__Qwen3-8B"
INSPECT_EVAL = (
    FIXTURES / "inspect" / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)


def mixed_folder(tmp_path):
    """lm-eval samples (and their results file) of one model beside an Inspect log of another."""
    shutil.copytree(QWEN, tmp_path / "Qwen__Qwen3-8B")
    shutil.copy(INSPECT_EVAL, tmp_path / INSPECT_EVAL.name)
    return tmp_path


def test_a_folder_of_two_formats_is_refused_naming_both(tmp_path):
    folder = mixed_folder(tmp_path)
    lm_eval = list(folder.rglob("samples_*.jsonl")) + list(folder.rglob("results_*.json"))
    with pytest.raises(ValueError) as info:
        br.detect_format(folder)
    message = str(info.value)
    # each format with its files: what reading the folder as one format would leave out
    assert f"lm_eval: {len(lm_eval)} file(s)" in message
    assert f"inspect: 1 file(s), '{INSPECT_EVAL.name}'" in message
    with pytest.raises(ValueError, match="inspect"):
        br.read(folder)


def test_a_folder_of_two_formats_reads_one_when_asked(tmp_path):
    folder = mixed_folder(tmp_path)
    assert br.read(folder, format="inspect").systems == ["openai/gpt-4o-mini"]
    metric = {
        "negotiationtom_belief": "acc",
        "negotiationtom_desire": "acc",
        "negotiationtom_intention": "exact_match",
    }
    assert br.read(folder, format="lm_eval", metric=metric).systems == [QWEN.name]
