"""The GPU matrix (issue #46): every row of the H200 table in one call, each a real `llm-adapt compare` in a
child process with vLLM blocked, on random-weight models written here (their writing timed too). One
JSON and one Markdown file with the verdicts and the times. Every row is a clean deployment: each must
PASS. `--device cpu` is its CPU analogue (the same code path, CPU devices, a deeper-than-wide body small
enough for 2 cores), which the tests run.

    python benchmarks/gpu_matrix.py --tokenizer .cuda_check/tokenizer --out OUT            # on the GPU machine
    python benchmarks/gpu_matrix.py --device cpu --tokenizer DIR --out OUT --body small      # the CPU analogue
    python benchmarks/gpu_matrix.py --docs OUT/matrix.json                                  # into docs/platforms.md

Rows (DEV is the device under test):
  tiny    cpu:fp32 -> DEV:bf16, DEV:fp16            the default model's layer shape, 4 layers
  host    cpu:fp32 -> DEV:bf16                      the reference reports' method, the floor cpu:bf16
  shared  DEV:fp32 -> DEV:bf16                      the gold on the target's device (rule 1: no absolute false alarm)
  fp32    cpu:fp32 -> DEV:fp32                      fp32 on another device (rule 2: a basis that fits the arithmetic)
  auto    auto (gold placement) -> DEV:bf16         rule 3: the gold where it is fastest and still gold
  split   auto:fp32 capped -> DEV:bf16              placed across the device and the host (GPU only)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import cuda_check  # noqa: E402  (the machine facts, the vLLM block, the wheels)

BODIES = {
    # Llama-3.2-3B's body at all 28 layers, with the tokenizer's vocabulary
    "3b": {"num_hidden_layers": 28, "hidden_size": 3072, "intermediate_size": 8192, "num_attention_heads": 24,
           "num_key_value_heads": 8, "head_dim": 128},
    # deeper than wide, for 2 cores: the same near-flat logits of a random body
    "small": {"num_hidden_layers": 12, "hidden_size": 128, "intermediate_size": 384, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 32},
}
BEGIN, END = "<!-- gpu_matrix:begin -->", "<!-- gpu_matrix:end -->"


@dataclass(frozen=True)
class Row:
    name: str
    model: str  # tiny | body
    reference: str
    targets: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    rule: str = ""


def rows(device: str) -> list[Row]:
    """The matrix for one device under test. Pure."""
    out = [Row("tiny", "tiny", "cpu:fp32", (f"{device}:bf16", f"{device}:fp16"), rule="the path"),
           Row("host", "body", "cpu:fp32", (f"{device}:bf16",), rule="floor on the host"),
           Row("shared", "body", f"{device}:fp32", (f"{device}:bf16",), rule="1: gold on the target's device"),
           Row("fp32", "body", "cpu:fp32", (f"{device}:fp32",), rule="2: fp32 on another device"),
           Row("auto", "body", "auto", (f"{device}:bf16",), rule="3: the gold where it is fastest")]
    if device != "cpu":
        out.append(Row("split", "body", "auto:fp32", (f"{device}:bf16",),
                       {"LLM_ADAPT_AUTO_MAX_MEMORY": "cuda:0=4GiB,cpu=200GiB"}, "placed across device and host"))
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="the device under test (default cuda; cpu: the analogue)")
    p.add_argument("--tokenizer", type=Path, help="a directory with the default model's tokenizer (--prepare of cuda_check)")
    p.add_argument("--body", choices=sorted(BODIES), default="3b")
    p.add_argument("--only", help="comma-separated row names")
    p.add_argument("--prompts", default="quick")
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--corpus-tokens", type=int, help="perplexity on the first N tokens of each corpus text (default: all)")
    p.add_argument("--out", type=Path, default=Path("gpu-matrix-out"))
    p.add_argument("--work", type=Path, help="where the random models go (default OUT/work)")
    p.add_argument("--timeout", type=float, default=280.0, help="seconds for the whole matrix")
    p.add_argument("--docs", type=Path, metavar="MATRIX_JSON", help="write a matrix.json into docs/platforms.md and stop")
    return p.parse_args(argv)


def write_models(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, float]]:
    from llm_adapt.models.synthetic import write_tiny_llama

    work = args.work or args.out / "work"
    paths, seconds = {}, {}
    for name, shape in (("tiny", cuda_check.SMOLLM2_SHAPE), ("body", BODIES[args.body])):
        start = time.perf_counter()
        paths[name] = str(write_tiny_llama(work / name, tokenizer_from=args.tokenizer, **shape))
        seconds[name] = round(time.perf_counter() - start, 1)
    return paths, seconds


def row_argv(row: Row, model: str, out: Path, args: argparse.Namespace) -> list[str]:
    targets = [flag for t in row.targets for flag in ("--target", t)]
    corpus = ["--corpus-tokens", str(args.corpus_tokens)] if args.corpus_tokens else []
    return ["compare", model, "--reference", row.reference, *targets, "--prompts", args.prompts,
            "--max-new-tokens", str(args.max_new_tokens), *corpus, "--out", str(out), "--offline"]


def run_row(row: Row, model: str, args: argparse.Namespace, deadline: float) -> dict:
    out = args.out / row.name
    argv = row_argv(row, model, out, args)
    os.environ.update(row.env)
    try:
        code, seconds = cuda_check.run_compare(argv, args.out / f"{row.name}.log", max(1.0, deadline - time.time()))
    finally:
        for key in row.env:
            os.environ.pop(key, None)
    found = cuda_check.verdicts(out)
    settings = {}
    if (out / "accuracy.json").is_file():
        data = json.loads((out / "accuracy.json").read_text())
        settings = data.get("settings") or {}
        found["reference_seconds"] = (data.get("reference") or {}).get("run_seconds")
        found["decided_by"] = {t["label"]: "; ".join((t.get("verdict") or {}).get("reasons") or []) or "-"
                               for t in data.get("targets", [])}
    return {**asdict(row), "argv": argv, "exit_code": code, "seconds": round(seconds, 1),
            "reference_ran_on": settings.get("reference"), "reference_why": settings.get("reference_why"), **found}


def all_pass(record: dict) -> bool:
    """Every row ran and every target PASSed. Pure."""
    return bool(record["rows"]) and all(r["exit_code"] == 0 and r.get("targets") and
                                        all(s == "PASS" for s in r["targets"].values()) for r in record["rows"])


def markdown(record: dict) -> str:
    m = record["machine"]
    lines = [f"GPU matrix, {m['date'][:10]}: {m['device'] or 'CPU analogue'} (host CPU: {m.get('cpu', 'not recorded')});"
             f" torch {m['torch']}"
             f" (CUDA {m['torch_cuda']}), transformers {m['transformers']}, vLLM imports blocked. Models written here:"
             f" {', '.join(f'{k} {v} s' for k, v in record['model_seconds'].items())} (body: {record['body']}).", "",
             "| row | rule | gold | target | verdict | gold ran on | time s | what decided it |",
             "|---|---|---|---|---|---|---|---|"]
    for r in record["rows"]:
        for label, status in (r.get("targets") or {"-": f"exit {r['exit_code']}"}).items():
            why = (r.get("decided_by") or {}).get(label, "-").replace("|", "/")
            lines.append(f"| {r['name']} | {r['rule']} | {r['reference']} | {label} | {status} | "
                         f"{r.get('reference_ran_on') or '-'} | {r['seconds']} | {why} |")
    lines += ["", f"All clean rows PASS: {'yes' if all_pass(record) else 'no'}; total {record['seconds']} s."]
    return "\n".join(lines) + "\n"


def write_docs(matrix_json: Path, page: Path = ROOT / "docs" / "platforms.md") -> None:
    record = json.loads(matrix_json.read_text())
    block = f"{BEGIN}\n{markdown(record)}{END}"
    text = page.read_text() if page.exists() else ""
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text += f"\n## The GPU matrix\n\nWritten by `benchmarks/gpu_matrix.py --docs`.\n\n{block}\n"
    page.write_text(text)


def host_cpu() -> str:
    from llm_adapt import platforms

    flags = platforms.cpu_flags()
    isa = "AVX-512 with bf16" if "avx512_bf16" in flags else "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else ""
    return f"{platforms.cpu_model()}, {platforms.cpu_cores()} cores" + (f", {isa}" if isa else "")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda_check.ensure_importable()
    if args.docs:
        write_docs(args.docs)
        return 0
    if not args.tokenizer or not (args.tokenizer / "tokenizer.json").is_file():
        print("gpu_matrix: --tokenizer DIR with tokenizer.json is needed (cuda_check.py --prepare DIR makes it)")
        return 2
    start = time.time()
    deadline = start + args.timeout
    args.out.mkdir(parents=True, exist_ok=True)
    models, model_seconds = write_models(args)
    wanted = set(args.only.split(",")) if args.only else None
    record = {"machine": {**cuda_check.machine(), "cpu": host_cpu()}, "device": args.device, "body": args.body, "model_seconds": model_seconds,
              "rows": []}
    for row in rows(args.device):
        if wanted is None or row.name in wanted:
            record["rows"].append(run_row(row, models[row.model], args, deadline))
    record["seconds"] = round(time.time() - start, 1)
    record["all_pass"] = all_pass(record)
    (args.out / "matrix.json").write_text(json.dumps(record, indent=2) + "\n")
    (args.out / "matrix.md").write_text(markdown(record))
    print(markdown(record))
    return 0 if record["all_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
