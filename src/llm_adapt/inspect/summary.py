"""Terminal rendering of an InspectResult (rich tables). Reads the result only."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llm_adapt.inspect.gates import gate_lines
from llm_adapt.inspect.memory import GIB
from llm_adapt.inspect.multinode import summary_lines
from llm_adapt.inspect.platform_env import note_lines
from llm_adapt.inspect.stage import InspectResult


def gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def unsupported_verdict(architecture: str, registry: str) -> str:
    """The plan's verdict on an architecture no engine serves, in one line (`registry`: where the answer came from)."""
    return (f"verdict: unsupported: {architecture} is in neither {registry} nor "
            f"transformers; it needs a port (an out-of-tree vLLM plugin)")


def print_inspect(result: InspectResult, console: Console) -> None:
    support = result.support
    console.print(f"[bold]{result.model['name']}[/bold]  {result.architecture}  ({result.model['path']})")
    console.print(f"vLLM support: [bold]{support['vllm']}[/bold] per {support['registry']}")
    gate = result.operator_gate
    if gate.get("applies"):
        console.print(f"Operator gate: [bold]{gate['kind']}[/bold]: {gate['conclusion']}", highlight=False)
        for f in gate["files"]:
            console.print(f"  {f['file']}: {f['kind']} ({'; '.join(f['evidence'][:2])})", markup=False, highlight=False)
    strategy = result.strategy
    if strategy:
        console.print(f"Strategy: [bold]{strategy['decision']}[/bold]. {strategy['headline']}.", highlight=False)
        for line in strategy["evidence"]:
            console.print(f"  evidence: {line}", markup=False, highlight=False)
        if strategy.get("plugin"):
            console.print(f"  plugin skeleton: {strategy['plugin']['path']}", markup=False, highlight=False)
    else:
        console.print(f"Strategy: {support['strategy']}. {support['detail']}.")
    if support["vllm"] == "unsupported":  # no engine can serve it: the plan's tables would answer nothing
        console.print("The memory and deployment plan are in `--json` and `--out DIR`; no engine can serve this "
                      "architecture until it is ported.", markup=False, highlight=False)
        return
    console.print(_model_table(result))
    _print_operators(result, console)
    console.print(_memory_table(result))
    _print_plan(result, console)
    if result.gates:  # inspect/gates.py: what the adapter workflow gates on, before any device
        console.print("\n" + "\n".join(gate_lines(result.gates)), markup=False, highlight=False, soft_wrap=True)


def _print_operators(result: InspectResult, console: Console) -> None:
    inventory = result.inventory
    if inventory:
        label = "read from the model's code" if inventory["source"] == "model code" else "[yellow]config only[/yellow]"
        console.print(f"Operator inventory {label}: {inventory['source_note']}", markup=True, highlight=False)
    console.print(_operator_table(result))
    if inventory.get("aten_ops"):
        ops = ", ".join(f"{name} x{n}" for name, n in inventory["aten_ops"].items())
        console.print(f"aten ops of one decoder layer: {ops} ({inventory['trace_note']})", markup=False, highlight=False)
    for caveat in result.caveats:
        console.print(f"caveat on {caveat['operator']}: {caveat['text']}. Check: {caveat['check']}. "
                      f"Source: {caveat['source']}",
                      markup=False, highlight=False)


def _print_plan(result: InspectResult, console: Console) -> None:
    plan, params = result.plan, result.parameters
    console.print(f"\n[bold]Deployment plan[/bold] on {result.platform.display}: "
                  f"TP {plan.tensor_parallel} x PP {plan.pipeline_parallel} over {plan.nodes} node(s)")
    for mode in ("eager", "graph"):
        title = "Eager mode" if mode == "eager" else f"Graph mode: {result.platform.graph_mode}"
        console.print(f"\n[bold]{title}[/bold]")
        console.print(plan.commands[mode], markup=False, highlight=False, soft_wrap=True)
    if plan.env_notes:  # inspect/platform_env.py: each variable, why, and its source
        console.print("\n[bold]Environment[/bold]")
        console.print("\n".join(note_lines(plan.env_notes)), markup=False, highlight=False, soft_wrap=True)
    if plan.multinode:
        known = {n["name"] for n in plan.env_notes}
        console.print("\n" + "\n".join(summary_lines(plan.multinode, known)), markup=False, highlight=False,
                      soft_wrap=True)
    if plan.layer_dump:  # npu: opt-in layer capture through msprobe (inspect/msprobe_config.py)
        dump = plan.layer_dump
        console.print(f"\n[bold]Layer capture (opt-in, {dump['mode']}): {dump['tool']}[/bold]")
        console.print(f"{dump['command']}\nthen: {dump['then']}", markup=False, highlight=False, soft_wrap=True)
    tuned = plan.tuned
    if tuned:
        gain = f"{tuned['gain']:.2f}x ± {tuned['gain_uncertainty']:.2f}" if "gain" in tuned else "n/a"
        console.print(f"\n[bold]Tuned ({tuned['name']}; gain over engine defaults {gain}; {tuned['note']})[/bold]")
        console.print(tuned["command"], markup=False, highlight=False, soft_wrap=True)
    for warning in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    if params["agree"] is False:
        console.print(f"[red]warning:[/red] config says {params['from_config']:,} parameters, "
                      f"weights hold {params['from_weights']:,}")
        for line in params.get("accounting", {}).get("warnings", []):
            console.print(f"[red]warning:[/red] {line}", highlight=False)


def _model_table(result: InspectResult) -> Table:
    cfg, params = result.config, result.parameters
    table = Table(title="Model", show_header=False)
    table.add_row("layers / hidden / intermediate", f"{cfg['num_layers']} / {cfg['hidden_size']} / {cfg['intermediate_size']}")
    table.add_row("heads / KV heads / head_dim", f"{cfg['num_heads']} / {cfg['num_kv_heads']} / {cfg['head_dim']}")
    table.add_row("vocab / max positions", f"{cfg['vocab_size']} / {cfg['max_position_embeddings']}")
    table.add_row("parameters (config)", f"{params['from_config']:,}")
    weights = f"{params['from_weights']:,} {params['weights_by_dtype']}" if params["from_weights"] else "no weights present"
    table.add_row("parameters (safetensors)", weights)
    return table


def _operator_table(result: InspectResult) -> Table:
    table = Table(title="Operators")
    table.add_column("operator")
    table.add_column("value")
    table.add_column("read from")
    table.add_column("caveats")
    for op in result.operators:
        table.add_row(op["name"], op["value"], op.get("evidence", ""), str(len(op["caveats"])) if op["caveats"] else "-")
    return table


def _memory_table(result: InspectResult) -> Table:
    plan = result.plan
    table = Table(title="Memory (per device)", show_header=False)
    table.add_row("weights fp32 / bf16 / int8", " / ".join(gib(result.weight_bytes[d]) for d in ("fp32", "bf16", "int8")))
    table.add_row(f"device memory{' (assumed)' if plan.device_memory_assumed else ''}", f"{plan.device_memory_gib:g} GiB")
    table.add_row(f"weights on each device ({plan.dtype})", gib(plan.weight_bytes_per_device))
    table.add_row("activation reserve (estimate)", gib(plan.activation_reserve_bytes))
    table.add_row("KV pool" + (" (VLLM_CPU_KVCACHE_SPACE)" if plan.kv_pool_exact else " (estimate)"), gib(plan.kv_pool_bytes))
    table.add_row(f"KV bytes per token ({plan.kv_dtype})", f"{plan.kv_bytes_per_token:,}")
    table.add_row("KV cache tokens / blocks", f"{plan.kv_cache_tokens:,} / {plan.kv_cache_blocks:,} of {plan.block_size}")
    table.add_row("max-model-len (longest that fits)", f"{plan.max_model_len:,} ({plan.longest_max_model_len:,})")
    table.add_row("max concurrency at max-model-len", f"{plan.max_concurrency:.2f}x")
    return table
