"""docs/pir.md's example runs and prints what the page shows."""

from __future__ import annotations

import contextlib
import io
import re

from tests.conftest import REPO_ROOT


def test_the_example_of_docs_pir_md_prints_what_the_page_shows():
    text = (REPO_ROOT / "docs" / "pir.md").read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    shown = re.findall(r"```\n(\{.*?\})\n```", text, re.S)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/pir.md", "exec"), {})
    assert out.getvalue().strip() == shown.strip()
