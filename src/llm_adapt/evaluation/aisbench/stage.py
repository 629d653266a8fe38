"""eval --backend aisbench: AISBench runs the served model on a dataset config (offline: a folder given, or
AISBench's own dataset folder), the gold answers the same prompts in process, AISBench scores both sides,
and its per-item correctness is paired item by item as the lm-eval path pairs it. Writes eval.json.

Two AISBench calls under <run>/aisbench/: `--mode infer` of the served model, then, with the gold's
predictions written beside the served ones, `--mode eval --reuse` of both with --dump-eval-details."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llm_adapt import rundir
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.errors import AdaptError
from llm_adapt.evaluation.aisbench import config, gold, install, results
from llm_adapt.evaluation.judge import paired_rows, verdict
from llm_adapt.evaluation.power import DETECT_POINTS
from llm_adapt.evaluation.rules import AISBENCH_THRESHOLD
from llm_adapt.evaluation.stats import DEFAULT_RTOL

RUN_TIMEOUT_S = 6 * 3600  # one AISBench call; a hung one is stopped, not waited on forever
LOG_TAIL = 8


@dataclass(frozen=True)
class Options:
    dataset: str = config.DEFAULT_DATASET  # FAMILY/NAME, as vLLM-Ascend's nightly writes dataset_conf
    data_dir: Path | None = None  # the dataset's folder; None: AISBench's own (ais_bench/datasets/<family>)
    api: str = "chat"  # chat | completions
    max_out_len: int = 512
    batch_size: int = 4
    limit: int | None = None  # --num-prompts
    detect: float = DETECT_POINTS
    threshold: float = AISBENCH_THRESHOLD


def run_aisbench_stage(source, endpoint: Endpoint, out: Path, options: Options = Options(),
                       say: Callable[[str], None] = print):
    """`source`: the gold's ModelSpec (local weights); `endpoint`: the served model."""
    from llm_adapt.engines.preflight import resolve_model_name
    from llm_adapt.evaluation.stage import EVAL_FILE, EvalResult

    exe = install.require()
    variable = config.datasets_variable(_dataset_source(exe, options.dataset).read_text())
    model_name, _ = resolve_model_name(endpoint)
    served = config.Served(endpoint.base_url, model_name, options.api, options.max_out_len, options.batch_size,
                           endpoint.api_key)
    work = out / rundir.AISBENCH_DIR
    work.mkdir(parents=True, exist_ok=True)
    data = str(options.data_dir.resolve()) if options.data_dir else None
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    say(f"AISBench {options.dataset}: served model through {endpoint.base_url} ...")
    _call(exe, work, config.render(served, options.dataset, data, variable=variable), "infer", options.limit)
    seconds["served_generative"] = round(time.perf_counter() - t0, 1)
    stamp = _only_run(work)
    rows_path = _one_file(stamp / "predictions" / config.SERVED_ABBR, ".jsonl")
    rows = results.predictions(rows_path.read_text())

    t0 = time.perf_counter()
    say(f"AISBench {options.dataset}: gold in process (fp32), {len(rows)} prompts ...")
    texts = gold.answers(str(source.path), [results.chat_messages(r["origin_prompt"]) for r in rows],
                         options.max_out_len, say)
    gold_dir = stamp / "predictions" / config.GOLD_ABBR
    gold_dir.mkdir(parents=True, exist_ok=True)
    (gold_dir / rows_path.name).write_text("".join(results.gold_line(r, t) for r, t in zip(rows, texts)))
    seconds["gold_generative"] = round(time.perf_counter() - t0, 1)

    _call(exe, work, config.render(served, options.dataset, data, with_gold=True, variable=variable), "eval", options.limit,
          reuse=stamp.name)
    scored = {abbr: _read_json(stamp / "results" / abbr / f"{rows_path.stem}.json")
              for abbr in (config.SERVED_ABBR, config.GOLD_ABBR)}
    s_items, g_items = (results.correctness(scored[a]) for a in (config.SERVED_ABBR, config.GOLD_ABBR))
    broken = results.failed(rows, len(s_items))
    for i in broken:  # a failed request is not a wrong answer: left out of the pairing, and counted
        s_items.pop(i, None)
    task = rows_path.stem
    pairs = paired_rows(task, {"accuracy": s_items}, {"accuracy": g_items}, DEFAULT_RTOL, options.detect,
                        options.threshold)
    s_acc, g_acc = (results.accuracy(scored[a]) for a in (config.SERVED_ABBR, config.GOLD_ABBR))
    scores = [{"task": task, "metric": "accuracy", "served": None if s_acc is None else s_acc / 100,
               "gold": None if g_acc is None else g_acc / 100, "served_stderr": None, "num_fewshot": 0, "chat": options.api == "chat"}]
    family, _ = config.dataset_module(options.dataset)
    meta = {"dataset_conf": options.dataset, "request_conf": config.REQUEST_CONF[options.api],
            "data": "given" if data else f"AISBench's ais_bench/datasets/{family}", "max_out_len": options.max_out_len,
            "batch_size": options.batch_size, "generation_kwargs": dict(served.generation_kwargs),
            "accuracy": {"served": s_acc, "gold": g_acc}, "failed_requests": broken, "version": install.VERSION,
            "threshold": options.threshold}
    result = EvalResult(model=source.name, endpoint=endpoint.redacted() | {"model": model_name}, backend="aisbench",
                        settings={"limit": options.limit, "num_fewshot": 0, "rtol": DEFAULT_RTOL, "detect": options.detect,
                                  "threshold": options.threshold}, scores=scores, paired=pairs, baseline=[], skipped=[],
                        seconds=seconds, verdict=verdict(pairs, [], []), aisbench=meta)
    result.save(out / EVAL_FILE)
    return result


def _call(exe: Path, work: Path, text: str, mode: str, limit: int | None, reuse: str | None = None) -> None:
    """One AISBench call in its own session (stopped with its children if we are), its output in a log."""
    cfg = work / f"{mode}.py"
    cfg.write_text(text)
    argv = [str(exe), str(cfg), "--mode", mode, "--work-dir", str(work), "--dump-eval-details"]
    argv += ["--num-prompts", str(limit)] if limit else []
    argv += ["--reuse", reuse] if reuse else []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # its venv, not ours
    log = work / f"{mode}.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, cwd=work, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AdaptError(f"ais_bench --mode {mode} ran past {RUN_TIMEOUT_S} s and was stopped (log: {log})") from None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if code != 0:
        raise AdaptError(f"ais_bench --mode {mode} exited {code}: {_tail(log)} (log: {log})")


def _dataset_source(exe: Path, conf: str) -> Path:
    """The dataset config's file inside AISBench's venv (found by its own interpreter, from the script's
    first line); an unknown name is one line naming AISBench's --search."""
    from llm_adapt.errors import UsageError

    _, module = config.dataset_module(conf)
    first = exe.read_text(errors="replace").splitlines()[0] if exe.is_file() else ""
    python = first[2:].strip() if first.startswith("#!") else "python3"
    found = subprocess.run([python, "-c", "import importlib.util, sys; s = importlib.util.find_spec(sys.argv[1]); "
                                          "print(s.origin if s else '')", module],
                           capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if found.returncode != 0 or not found.stdout.strip():
        raise UsageError(f"--aisbench-dataset {conf}: AISBench has no such dataset config "
                         f"(list them with: {exe} --datasets {conf.split('/')[-1]} --search)")
    return Path(found.stdout.strip())


def _only_run(work: Path) -> Path:
    """AISBench's timestamped folder of this eval (one per work dir)."""
    stamps = sorted(p for p in work.iterdir() if p.is_dir() and p.name[:8].isdigit())
    if not stamps:
        raise AdaptError(f"ais_bench wrote no run folder under {work}: {_tail(work / 'infer.log')}")
    return stamps[-1]


def _one_file(folder: Path, suffix: str) -> Path:
    found = sorted(folder.glob(f"*{suffix}")) if folder.is_dir() else []
    if len(found) != 1:  # AISBench exits 0 when a task failed: its task log says why
        logs = sorted((folder.parent.parent / "logs").rglob("*.out")) if folder.parent.parent.is_dir() else []
        raise AdaptError(f"ais_bench wrote {len(found)} {suffix} files in {folder}"
                         + (f": {_tail(logs[0])} (log: {logs[0]})" if logs else ""))
    return found[0]


def _read_json(path: Path) -> dict:
    import json

    if not path.is_file():
        logs = sorted((path.parent.parent.parent / "logs" / "eval").rglob("*.out"))
        raise AdaptError(f"ais_bench wrote no {path.name} for {path.parent.name}"
                         + (f": {_tail(logs[-1])} (log: {logs[-1]})" if logs else ""))
    return json.loads(path.read_text())


def _tail(log: Path) -> str:
    """The log's last lines that say something (errors first), on one line."""
    if not log.is_file():
        return "no log"
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "ERROR" in ln]
    return " | ".join((errors or lines)[-LOG_TAIL:])[-600:]
