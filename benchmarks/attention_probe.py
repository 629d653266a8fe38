"""Sharpened attention: the zoo's sharp model with its q and k projections scaled, so that attention is decisive
(a random model's attention is near-uniform and hides what q and k do wrong), served by `llm-adapt run --quick
--skip bench` and judged against its fp32 gold. Variants narrow a served difference down:

- `sharp-qk`: every q and k projection x4;
- `wide-v` (MLA): the same with the value head as wide as q and k;
- `no-rope` (MLA): the same with the rotary rows of q and k zeroed (q_pe and k_pe are 0).

    python benchmarks/attention_probe.py --families deepseek_v2,qwen3 --docs docs/models.md

The table (family x variant x verdict x served KL / floor x same top-1 x the located part) goes into the page
between its attention_probe markers, stamped with the CPU and the date.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from zoo import publish  # noqa: E402  the same machine stamp as the zoo's table

MARK_START, MARK_END = "<!-- attention_probe:start -->", "<!-- attention_probe:end -->"
QK_SCALE = 4.0
QK_WEIGHTS = ("q_proj.weight", "k_proj.weight", "kv_a_proj_with_mqa.weight", "kv_b_proj.weight")
MLA_VARIANTS = ("sharp-qk", "wide-v", "no-rope")


def write_variant(family: str, variant: str, out: Path, tokenizer: Path) -> Path:
    """The sharp zoo model of `family` with its q and k scaled (and, per variant, its value head widened or its
    rotary rows zeroed), written back as safetensors."""
    from safetensors.torch import load_file, save_file

    from llm_adapt.models.synthetic import write_zoo_model

    overrides = {"v_head_dim": 96} if variant == "wide-v" else {}
    model = write_zoo_model(family, out, tokenizer_from=tokenizer, sharp=True, **overrides)
    config = json.loads((model / "config.json").read_text())
    path = model / "model.safetensors"
    weights = load_file(path)
    for name in list(weights):
        if name.endswith(QK_WEIGHTS):
            weights[name] = weights[name] * QK_SCALE
        if variant == "no-rope":
            weights[name] = without_rope(name, weights[name], config)
    save_file(weights, path, metadata={"format": "pt"})
    return model


def without_rope(name: str, weight, config: dict):
    """MLA's rotary rows zeroed: each head's q_pe rows of q_proj, the k_pe rows of kv_a_proj_with_mqa."""
    nope, rope, lora = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["kv_lora_rank"]
    weight = weight.clone()
    if name.endswith("q_proj.weight"):
        heads = weight.view(config["num_attention_heads"], nope + rope, -1)
        heads[:, nope:, :] = 0
    elif name.endswith("kv_a_proj_with_mqa.weight"):
        weight[lora:, :] = 0
    return weight


def judge(model: Path, out: Path) -> dict:
    """`llm-adapt run MODEL --quick --skip bench`: the verdict, the served KL ratio and same top-1, and where the
    capture inside the engine placed the excess."""
    subprocess.run([sys.executable, "-m", "llm_adapt.cli", "run", str(model), "--quick", "--skip", "bench",
                    "--out", str(out)], capture_output=True, text=True)
    status = _read(out / "status.json")
    checks = {c.get("key"): c for c in ((_read(out / "endpoint_accuracy.json").get("verdict") or {}).get("checks") or [])}
    where = _read(out / "layers.json").get("first_local_excess") or {}
    return {"verdict": (status.get("verdict") or {}).get("status") or "no verdict",
            "kl_ratio": (checks.get("served_kl_ratio") or {}).get("value"),
            "top1": (checks.get("served_top1") or {}).get("value"),
            "located": f"{where['name']} ({where.get('part')})" if where.get("name") else "-"}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def table(rows: list[dict]) -> str:
    lines = ["| family | variant | verdict | served KL / floor | same top-1 | located |", "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['kl_ratio']:.3g}" if isinstance(r["kl_ratio"], (int, float)) else "-"
        lines.append(f"| {r['family']} | {r['variant']} | {r['verdict']} | {ratio} | {r['top1'] or '-'} | {r['located']} |")
    return "\n".join(lines)


def main() -> int:
    from llm_adapt.models.source import resolve_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="deepseek_v2,qwen3", help="comma-separated zoo families")
    parser.add_argument("--docs", type=Path, help="write the table into this page between its attention_probe markers")
    args = parser.parse_args()
    tokenizer = resolve_model("default").path
    rows = []
    with tempfile.TemporaryDirectory(prefix="attention-") as tmp:
        for family in args.families.split(","):
            variants = MLA_VARIANTS if family == "deepseek_v2" else MLA_VARIANTS[:1]
            for variant in variants:
                model = write_variant(family, variant, Path(tmp) / f"{family}-{variant}", tokenizer)
                row = {"family": family, "variant": variant, **judge(model, Path(tmp) / "runs" / f"{family}-{variant}")}
                rows.append(row)
                print(f"{family} {variant}: {row['verdict']} (KL ratio {row['kl_ratio']})", flush=True)
    publish("attention_probe.py", table(rows), args.docs, MARK_START, MARK_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
