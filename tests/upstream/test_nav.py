"""The tutorial's nav entry: a patch `git apply` takes in a checkout whose mkdocs.yml has main's Model Tutorials
section, wherever that section sits in the file, and that lists the page once."""

import shutil
import subprocess

import pytest

from llm_adapt.upstream.nav import entry, nav_patch, with_entry

# mkdocs.yml's shape on main: the section, its index page first, other pages after it.
MKDOCS = """site_name: x
nav:
  - index.md
  - Getting Started:
    - quick_start.md
    - Model Tutorials:
        - tutorials/models/index.md
        - tutorials/models/Qwen3-Dense.md
        - tutorials/models/GLM5.md
    - Feature Tutorials:
        - tutorials/features/index.md
"""


@pytest.mark.skipif(shutil.which("git") is None, reason="git applies the patch")
@pytest.mark.parametrize("lines_above", [0, 200])  # the section near the top, or far below where it was read
def test_git_applies_the_patch_and_lists_the_page_after_the_index(tmp_path, lines_above):
    text = "# comment\n" * lines_above + MKDOCS
    (tmp_path / "mkdocs.yml").write_text(text)
    (tmp_path / "nav.patch").write_text(nav_patch("Tiny.md"))
    done = subprocess.run(["git", "apply", "nav.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "mkdocs.yml").read_text() == with_entry(text, "Tiny.md")
    assert (tmp_path / "mkdocs.yml").read_text().count(entry("Tiny.md")) == 1


def test_with_entry_places_the_page_once_and_refuses_a_file_without_the_section():
    once = with_entry(MKDOCS, "Tiny.md")
    assert once.splitlines()[7:9] == [entry("Tiny.md"), "        - tutorials/models/Qwen3-Dense.md"]
    assert with_entry(once, "Tiny.md") == once
    with pytest.raises(ValueError, match="Model Tutorials"):
        with_entry("nav:\n  - index.md\n", "Tiny.md")
