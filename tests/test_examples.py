"""Every example runs: each `llm-adapt ...` command line of README.md, docs/**/*.md and the subcommands' help
epilogs (the EPILOG strings of llm_adapt.commands) parses with the real parser (cli.build_parser).

The cheap ones also run, in a scratch directory: `inspect` (on the published configs of
tests/fixtures/configs, written as config-only model directories, or on the default model), `models`, and
`report`, `diff` and `export` on a fixture run directory (tests/upstream/test_adaptation.write_run: a CPU run
of a tiny Llama, with its adaptation gates; so `export` runs where it says `--plan-for`, the other export
lines are parsed only). A line that names a placeholder (MODEL, DIR, ...) is parsed only, and so is every
other subcommand: they start engines or measure models."""

from __future__ import annotations

import importlib
import pkgutil
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from llm_adapt import commands
from llm_adapt.cli import build_parser, main

ROOT = Path(__file__).parents[1]
CHEAP = {"inspect", "models", "report", "diff", "export"}
COMMAND = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:\S*/)?llm-adapt\s+(\S.*)$")
FENCE = re.compile(r"^```")
SPAN = re.compile(r"`([^`\n]+)`")
# model directories the examples name, stood in for by the published config of the same model
CONFIGS = {"Llama-3.1-8B-Instruct": "llama-3.1-8b", "Llama-3.1-70B-Instruct": "llama-3.1-70b",
           "Llama-3.2-3B-Instruct": "llama-3.2-3b", "Llama-3.2-1B-Instruct": "llama-3.2-1b"}


@dataclass(frozen=True)
class Example:
    where: str  # file:line, or the epilog's name
    line: str  # the command line after `llm-adapt`

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.line, comments=True)


def commands_in(text: str, where: str) -> list[Example]:
    """The command lines of a Markdown text or an epilog: every line of a fenced block or an epilog, with
    backslash continuations joined, that starts with `llm-adapt`; and every inline code span that does and
    gives an argument after the subcommand (a bare `llm-adapt compare` in prose names the command)."""
    found: list[Example] = []
    lines, fenced, pending = text.splitlines(), False, ""
    for number, raw in enumerate(lines, 1):
        if FENCE.match(raw.strip()):
            fenced = not fenced
            continue
        if fenced or where.startswith("EPILOG"):
            line = pending + raw.strip()
            pending = line[:-1] + " " if line.endswith("\\") else ""
            match = COMMAND.match(line) if not pending else None
            if match:
                found.append(Example(f"{where}:{number}", match.group(1)))
        else:
            found += [Example(f"{where}:{number}", m.group(1)) for span in SPAN.findall(raw)
                      if (m := COMMAND.match(span.strip())) and len(m.group(1).split()) > 1]
    return found


def all_examples() -> list[Example]:
    found: list[Example] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        found += commands_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    for info in pkgutil.iter_modules(commands.__path__):
        module = importlib.import_module(f"llm_adapt.commands.{info.name}")
        for name in sorted(n for n in vars(module) if n.startswith("EPILOG")):
            found += commands_in(getattr(module, name), f"EPILOG {info.name}.{name}")
    return found


EXAMPLES = all_examples()


def test_the_examples_are_found_everywhere():
    places = {e.where.split(":")[0] for e in EXAMPLES}
    assert "README.md" in places and any(p.startswith("docs/") for p in places)
    epilogs = {p for p in places if p.startswith("EPILOG")}
    assert len(epilogs) >= 12, epilogs  # every subcommand but the ones without examples
    assert len(EXAMPLES) > 60


def test_extraction_joins_continuations_and_skips_prose():
    text = ("see `llm-adapt models --json`, `llm-adapt compare` and `llm-adapt` alone\n"
            "```bash\nllm-adapt eval m \\\n  --limit 3  # c\npip install .\n```\n")
    got = [(e.where, e.line) for e in commands_in(text, "X.md")]
    assert got == [("X.md:1", "models --json"), ("X.md:4", "eval m  --limit 3  # c")]
    assert commands_in(text, "X.md")[1].argv == ["eval", "m", "--limit", "3"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_every_example_parses(example, capsys):
    try:
        args = build_parser().parse_args(example.argv)
    except SystemExit as exc:
        pytest.fail(f"{example.where}: llm-adapt {example.line}: {capsys.readouterr().err.strip()} (exit {exc.code})")
    assert callable(args.handler)


# --- the cheap ones run -----------------------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")  # MODEL, DIR, RUN_DIR, OUT, URL, ...


def runnable(example: Example) -> bool:
    argv = example.argv
    if argv[0] not in CHEAP or "--try-backend" in argv:  # --try-backend starts vLLM
        return False
    if argv[0] == "export" and "--plan-for" not in argv:  # the fixture is a CPU run: only --plan-for exports it
        return False
    positionals = [a for a in argv[1:] if not a.startswith("-")]
    return not any(PLACEHOLDER.match(a) for a in positionals) and "--tuned" not in argv


CHEAP_EXAMPLES = [e for e in EXAMPLES if runnable(e)]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, tiny_llama, default_model):
    """A scratch directory with the models and run directories the cheap examples name."""
    from llm_adapt.models.source import default_gguf
    from llm_adapt.upstream.adaptation import build
    from tests.upstream.test_adaptation import write_run

    from llm_adapt import rundir

    root = tmp_path_factory.mktemp("examples")
    for name, fixture in CONFIGS.items():
        (root / name).mkdir()
        shutil.copy(ROOT / "tests" / "fixtures" / "configs" / f"{fixture}.json", root / name / "config.json")
    (root / "model.gguf").symlink_to(default_gguf())
    model = shutil.copytree(tiny_llama, root / "tiny-model")
    run = root / "fixture-run"
    source = write_run(run, model)
    build(run, source.path).save(run / rundir.ADAPTATION)
    return root, run


def run_dir_args(argv: list[str]) -> list[str]:
    """The RUN_DIR positionals of report, diff and export."""
    count = {"report": 1, "diff": 2, "export": 1}.get(argv[0], 0)
    return [a for a in argv[1:] if not a.startswith("-")][:count]


def test_the_model_directories_stand_for_the_examples(workspace):
    root, _ = workspace
    assert (root / "Llama-3.2-3B-Instruct" / "config.json").is_file()


@pytest.mark.parametrize("example", CHEAP_EXAMPLES, ids=[e.where for e in CHEAP_EXAMPLES])
def test_every_cheap_example_runs(example, workspace, monkeypatch, capsys):
    root, run = workspace
    monkeypatch.chdir(root)
    for path in run_dir_args(example.argv):
        if not (root / path).exists():
            shutil.copytree(run, root / path)
    code = main(example.argv)
    err = capsys.readouterr().err
    assert code == 0, f"{example.where}: llm-adapt {example.line}: exit {code}: {err.strip()[-500:]}"
