"""The tutorial's navigation entry, as a patch `git apply` takes in a vLLM-Ascend checkout. Pure.

vLLM-Ascend's main lists its model tutorials in mkdocs.yml's nav, under "Model Tutorials:", the section's own
index page first (`tutorials/models/index.md`, then `tutorials/models/Qwen3-Dense.md`); the Sphinx releases
list them in docs/source/tutorials/models/index.md's toctree. The export writes the entry for main's mkdocs.yml,
placed right after the section's index page: of all the nav's lines those are the ones upstream has kept
unchanged while pages came and went, so the patch's context still matches a checkout made later.
"""

from __future__ import annotations

NAV_FILE = "mkdocs.yml"
SECTION = "    - Model Tutorials:"
INDEX = "        - tutorials/models/index.md"
FIRST = "        - tutorials/models/Qwen3-Dense.md"  # the page after the index on main, the patch's trailing context
# Where the section sat on main as read; `git apply` looks for the context around it, anywhere in the file
# (a hunk at line 1 would have to match at the file's start).
NEAR_LINE = 170


def entry(page: str) -> str:
    """The nav line for a tutorial file name ("Model.md")."""
    return f"        - tutorials/models/{page}"


def with_entry(nav_text: str, page: str) -> str:
    """mkdocs.yml's text with the tutorial listed right after the Model Tutorials index page; unchanged when it
    is listed already. Raises ValueError when the file has no such section."""
    lines = nav_text.splitlines(keepends=True)
    if any(line.rstrip("\n") == entry(page) for line in lines):
        return nav_text
    for i, line in enumerate(lines):
        if line.rstrip("\n") == INDEX and i > 0 and lines[i - 1].rstrip("\n") == SECTION:
            return "".join(lines[:i + 1] + [entry(page) + "\n"] + lines[i + 1:])
    raise ValueError(f"{NAV_FILE} has no '{SECTION.strip()}' section opening with {INDEX.strip()}")


def nav_patch(page: str) -> str:
    """The patch that lists `page` in main's nav: two lines of leading context (the section and its index page)
    and one of trailing context, as `git apply` needs both sides."""
    return (f"diff --git a/{NAV_FILE} b/{NAV_FILE}\n--- a/{NAV_FILE}\n+++ b/{NAV_FILE}\n"
            f"@@ -{NEAR_LINE},3 +{NEAR_LINE},4 @@\n {SECTION}\n {INDEX}\n+{entry(page)}\n {FIRST}\n")
