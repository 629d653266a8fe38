"""docs/cli/ is what the argparse definitions make now: a page that drifts from the parser fails here."""

from pathlib import Path

from llm_adapt import docs_gen

DOCS = Path(__file__).parents[1] / "docs" / "cli"


def test_every_page_under_docs_cli_is_what_the_parser_makes_now():
    assert docs_gen.stale(DOCS) == [], "run: python -m llm_adapt.docs_gen"


def test_one_page_per_subcommand_and_an_index():
    from llm_adapt.cli import build_parser

    names = set(docs_gen.subcommands(build_parser()))
    assert set(docs_gen.pages()) == {f"{n}.md" for n in names} | {"README.md"}
    index = docs_gen.pages()["README.md"]
    assert all(f"({n}.md)" in index for n in names)


def test_a_page_shows_usage_every_option_with_its_default_and_the_examples():
    run = docs_gen.pages()["run.md"]
    assert run.startswith(docs_gen.HEADER) and "usage: llm-adapt run" in run
    assert "| `--max-new-tokens` | `N` |" in run and "| `--lang` | `en\\|zh` | `en` |" in run
    assert "## Examples" in run and "llm-adapt run default" in run


def test_check_names_a_stale_page_and_write_repairs_it(tmp_path, capsys):
    docs_gen.write(tmp_path)
    assert docs_gen.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "run.md").write_text("edited by hand\n")
    (tmp_path / "gone.md").write_text("a subcommand that no longer exists\n")
    assert docs_gen.stale(tmp_path) == ["gone.md", "run.md"]
    assert docs_gen.main(["--check", "--out", str(tmp_path)]) == 1
    assert "run.md: differs from the parser" in capsys.readouterr().err
    docs_gen.write(tmp_path)
    assert docs_gen.stale(tmp_path) == [] and not (tmp_path / "gone.md").exists()
