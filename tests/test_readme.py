"""Every ```python block of README.md runs, in order, in one namespace, in a fresh folder.

A block may carry marker comments the test reads:

``# readme-test: skip (why)``
    the block is not run (say why in the parentheses: it needs a file of the reader's own);
``# readme-test: expect-warning "text"``
    the block is expected to give a bayeval warning containing ``text``; any other bayeval
    warning fails.
"""

import re
import warnings
from pathlib import Path

import pytest

from bayeval._validate import BayevalWarning

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)
_SKIP = re.compile(r"^# readme-test: skip \((.+)\)$", re.M)
_EXPECT = re.compile(r'^# readme-test: expect-warning "(.+)"$', re.M)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


def test_every_skipped_block_says_why():
    for block in BLOCKS:
        if "readme-test: skip" in block:
            assert _SKIP.search(block), block[:200]


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the tour writes fit.nc
    namespace: dict = {}
    ran = 0
    for number, block in enumerate(BLOCKS, 1):
        if _SKIP.search(block):
            continue
        expected = _EXPECT.findall(block)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        caught = [w for w in caught if issubclass(w.category, BayevalWarning)]
        for w in caught:
            if not any(text in str(w.message) for text in expected):
                pytest.fail(
                    f"README python block {number} warned: {w.category.__name__}: {w.message}"
                )
        for text in expected:
            assert any(text in str(w.message) for w in caught), (number, text)
        ran += 1
    assert ran >= 2
