"""Which lm-eval tasks to run: the built-in ones rendered beside the run, the rest from lm-eval's registry.

A task whose dataset is neither cached nor reachable is skipped with one line naming the dataset and
the command that fetches it; it never fails the run."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from llm_adapt.errors import UsageError

BUILTIN = ("builtin-arith", "builtin-mc")
# vLLM-Ascend's e2e accuracy gate (tests/e2e/models/configs: gsm8k on every model); `run` runs it by default
# where its dataset is in the local Hugging Face datasets cache, without asking the network
UPSTREAM_GATE = ("gsm8k",)
GATE_CACHE_DIRS = ("openai___gsm8k",)  # datasets' cache folder of the hub id openai/gsm8k
LOGLIKELIHOOD = {"loglikelihood", "multiple_choice", "loglikelihood_rolling"}


@dataclass(frozen=True)
class Loaded:
    name: str
    generative: bool  # generate_until: chat completions with the chat template; else completions + loglikelihood
    skip: str | None = None  # why it cannot run here (one line)
    items: int | None = None  # the items its test split holds (what --limit can reach)


def datasets_cache(env: dict[str, str] | None = None) -> Path:
    """The Hugging Face datasets cache, as `datasets` resolves it (HF_DATASETS_CACHE, else HF_HOME/datasets,
    else ~/.cache/huggingface/datasets), without importing it."""
    env = os.environ if env is None else env
    if env.get("HF_DATASETS_CACHE"):
        return Path(env["HF_DATASETS_CACHE"])
    home = Path(env["HF_HOME"]) if env.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    return home / "datasets"


def gate_cached(env: dict[str, str] | None = None) -> bool:
    """Whether upstream's gate (gsm8k) is in the local datasets cache: a folder of it with files in it."""
    root = datasets_cache(env)
    return any((root / name).is_dir() and any((root / name).iterdir()) for name in GATE_CACHE_DIRS)


def default_run_tasks(quick: bool, env: dict[str, str] | None = None, gsm8k_data: Path | None = None) -> tuple[str, ...]:
    """`run`'s tasks when --tasks is not given: upstream's gate where its data was given (--gsm8k-data) or is in
    the local cache (not in a --quick smoke run), else none (the report says why and how to have it)."""
    return UPSTREAM_GATE if gsm8k_data is not None or (not quick and gate_cached(env)) else ()


GSM8K_SPLITS = ("train", "test")  # test: the items; train: the few-shot examples lm-eval's gsm8k draws
GSM8K_FORMATS = {".jsonl": "json", ".parquet": "parquet"}  # the `datasets` builder of each file kind


def gsm8k_files(folder: Path) -> dict[str, list[str]]:
    """gsm8k's data files in `folder` by split: AISBench's layout (train.jsonl, test.jsonl) or a copy of the hub
    repository openai/gsm8k (main/train-*.parquet, main/test-*.parquet). A split missing is a UsageError."""
    if not folder.is_dir():
        raise UsageError(f"--gsm8k-data {folder}: no such directory")
    files: dict[str, list[str]] = {}
    for split in GSM8K_SPLITS:
        jsonl = folder / f"{split}.jsonl"
        found = [jsonl] if jsonl.is_file() else sorted((folder / "main").glob(f"{split}-*.parquet"))
        if not found:
            raise UsageError(f"--gsm8k-data {folder}: no {split} split (want {split}.jsonl, or main/{split}-*.parquet "
                             "as in a copy of openai/gsm8k)")
        files[split] = [str(path.resolve()) for path in found]
    if len({Path(paths[0]).suffix for paths in files.values()}) > 1:
        raise UsageError(f"--gsm8k-data {folder}: train and test are in different formats; give both as .jsonl or "
                         "both as .parquet")
    return files


def local_gsm8k_task(files: dict[str, list[str]], registry_root: Path) -> dict:
    """lm-eval's own gsm8k task (prompt, few-shot, filters, metrics: its YAML, included) reading `files` instead
    of the hub: the same task name, so scores and the exported e2e config say gsm8k. Pure."""
    builder = GSM8K_FORMATS[Path(files["test"][0]).suffix]
    return {"task": "gsm8k", "include": str(registry_root / "gsm8k" / "gsm8k.yaml"), "dataset_path": builder,
            "dataset_name": None, "dataset_kwargs": {"data_files": files}}


def render_local_gsm8k(folder: Path, data: Path) -> Path:
    """`folder` holding gsm8k.yaml for the data at `data` (a folder for lm-eval's include_path)."""
    import yaml

    task = local_gsm8k_task(gsm8k_files(data), _registry_root())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gsm8k.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return folder


def parse_tasks(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise UsageError("--tasks is empty; give e.g. --tasks builtin-mc,builtin-arith")
    return list(dict.fromkeys(names))


def task_manager(workdir: Path, names: list[str], gsm8k_data: Path | None = None):
    """lm-eval's task index for `names`: our built-in tasks, gsm8k on the files at `gsm8k_data` where given,
    plus the registry folders that define the others, or lm-eval's whole registry where a name is not found
    that way (indexing all of it parses about 14,000 YAML files: 22 s here, once per call; the paths given
    are indexed after it, so the local gsm8k stands in for the registry's)."""
    from lm_eval.tasks import TaskManager

    from llm_adapt.evaluation.builtin import render

    ours = [str(render(workdir / "tasks"))]
    if gsm8k_data is not None and "gsm8k" in names:
        ours.append(str(render_local_gsm8k(workdir / "tasks-gsm8k", gsm8k_data)))
    others = [name for name in names if name not in BUILTIN and not (name == "gsm8k" and len(ours) > 1)]
    folders = registry_folders(others, _registry_root()) if others else []
    if folders is None:
        return TaskManager(include_path=ours, include_defaults=True)
    return TaskManager(include_path=[*ours, *map(str, folders)], include_defaults=False)


def _registry_root() -> Path:
    import lm_eval.tasks

    return Path(lm_eval.tasks.__file__).parent


def registry_folders(names: list[str], root: Path) -> list[Path] | None:
    """The top-level folders of lm-eval's registry (`root`) holding a YAML file that declares each name
    as its `task:`, found by reading the files as text (1 s, where parsing them all took 22 s). None if
    a name is not declared so (a group, a tag or a typo): then the whole registry is the index, as
    lm-eval's own. A task's `include:` is read by path when the task is built, wherever it points."""
    wanted = {name: re.compile(rf"^task:\s*[\"']?{re.escape(name)}[\"']?\s*$", re.M) for name in names}
    found: dict[str, set[Path]] = {name: set() for name in names}
    for path in root.rglob("*.y*ml"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for name, pattern in wanted.items():
            if name in text and pattern.search(text):
                top = path.relative_to(root).parts
                if len(top) == 1:  # a file at the registry's top: no folder of its own to index
                    return None
                found[name].add(root / top[0])
    if not all(found.values()):
        return None
    return sorted(set().union(*found.values()))


def check_known(names: list[str], tm) -> None:
    unknown = [n for n in names if n not in tm.all_tasks]
    if unknown:
        raise UsageError(f"unknown task {unknown[0]!r}; built-in: {', '.join(BUILTIN)}; "
                         "others are lm-eval's task names (lm-eval ls tasks)")


def fetch_command(name: str, tm) -> tuple[str, str]:
    """(dataset, the command that caches it) from the task's config."""
    cfg: dict = {}
    entry = tm.task_index.get(name)
    if entry is not None and getattr(entry, "yaml_path", None):
        try:
            from lm_eval.tasks._yaml_loader import load_yaml

            cfg = load_yaml(entry.yaml_path, resolve_func=False)  # follows 'include', as lm-eval does
        except Exception:  # noqa: BLE001 - only for a better message
            cfg = {}
    path, sub = cfg.get("dataset_path", name), cfg.get("dataset_name")
    args = f"'{path}'" + (f", '{sub}'" if sub else "")
    return path, f"python -c \"import datasets; datasets.load_dataset({args})\""


def load(name: str, tm) -> Loaded:
    """Build the task once (this loads its dataset); a dataset that cannot be had becomes a skip."""
    from lm_eval.tasks import get_task_dict

    try:
        leaves = _leaves(get_task_dict([name], tm))
    except Exception as exc:  # noqa: BLE001 - datasets raises many types for "not here, no network"
        dataset, command = fetch_command(name, tm)
        return Loaded(name, False, f"{name}: dataset {dataset} not cached and not reachable "
                                   f"({type(exc).__name__}); fetch it with: {command}")
    return Loaded(name, all(t.OUTPUT_TYPE not in LOGLIKELIHOOD for t in leaves), items=_items(leaves))


def _items(leaves: list) -> int | None:
    """The evaluation documents of a task (its leaves together); None where lm-eval does not say."""
    try:
        return sum(len(leaf.eval_docs) for leaf in leaves)
    except Exception:  # noqa: BLE001 - only a figure for the report
        return None


def _leaves(tree) -> list:
    out = []
    for value in tree.values():
        out.extend(_leaves(value) if isinstance(value, dict) else [value])
    return out


def validate(names: list[str], gsm8k_data: Path | None = None) -> None:
    """Unknown task names, and --gsm8k-data without its files or without the gsm8k task, fail before any
    engine starts."""
    import tempfile

    if gsm8k_data is not None:
        gsm8k_files(gsm8k_data)
        if "gsm8k" not in names:
            raise UsageError(f"--gsm8k-data is gsm8k's dataset, and --tasks {','.join(names)} does not run gsm8k; "
                             "add gsm8k to --tasks")
    with tempfile.TemporaryDirectory() as tmp:
        check_known(names, task_manager(Path(tmp), names, gsm8k_data))
