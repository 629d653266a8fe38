"""The tuning grid and the budget cutter. Pure functions of the plan and a few numbers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.command import Command
from llm_adapt.messages import Said, reason
from llm_adapt.platforms import get_platform

if TYPE_CHECKING:
    from llm_adapt.inspect.plan import DeployPlan


@dataclass(frozen=True)
class Trial:
    name: str
    knob: str  # what this trial changes against the engine's defaults ("baseline" for none)
    env: dict[str, str] = field(default_factory=dict)  # set (value) or removed (value None is not allowed: use unset)
    unset_env: tuple[str, ...] = ()
    args: tuple[str, ...] = ()  # extra engine flags
    remove_args: tuple[str, ...] = ()  # plan flags dropped (with their values)
    graph: bool = False
    prior: float = 0.0  # expected relative gain, for ordering under a budget


class SkippedTrial(TypedDict):
    """A setting the budget or --max-trials left out (grid.cut_to_budget), with its estimated cost."""
    name: str
    knob: str
    estimated_s: float
    reason: Said


def cpu_trials(plan: DeployPlan, cores: int) -> list[Trial]:
    """The knobs that matter on vLLM-CPU. The baseline is the engine's own defaults: its thread binding and
    no LD_PRELOAD; binding and preload are then measured alone and together (the plan)."""
    all_cores = f"0-{cores - 1}" if cores > 1 else "0"
    seqs = plan.max_num_seqs
    preload = plan.env.get("LD_PRELOAD")
    bind = {"VLLM_CPU_OMP_THREADS_BIND": all_cores}
    if preload:
        base, plan_env = "bind + preload", {**bind, "LD_PRELOAD": preload}
        trials = [
            Trial("engine defaults (no LD_PRELOAD)", "baseline", unset_env=("VLLM_CPU_OMP_THREADS_BIND", "LD_PRELOAD")),
            Trial(f"bind all cores ({all_cores})", "VLLM_CPU_OMP_THREADS_BIND", env=bind, unset_env=("LD_PRELOAD",),
                  prior=0.5),
            Trial("LD_PRELOAD tcmalloc + Intel OpenMP", "LD_PRELOAD", env={"LD_PRELOAD": preload},
                  unset_env=("VLLM_CPU_OMP_THREADS_BIND",), prior=0.2),
            Trial("bind all cores + LD_PRELOAD (the plan)", "bind + LD_PRELOAD", env=plan_env, prior=0.6),
        ]
    else:
        base, plan_env = "all cores", bind
        trials = [
            Trial("engine defaults", "baseline", unset_env=("VLLM_CPU_OMP_THREADS_BIND",)),
            Trial(f"bind all cores ({all_cores})", "VLLM_CPU_OMP_THREADS_BIND", env=bind, prior=0.5),
        ]
    trials += [
        Trial(f"{base} + OMP_NUM_THREADS={cores}", "OMP_NUM_THREADS", env={**plan_env, "OMP_NUM_THREADS": str(cores)},
              prior=0.1),
        Trial(f"{base} + graph mode (torch.compile)", "graph mode", env=plan_env, graph=True, prior=0.3),
        Trial(f"{base} + max-num-seqs {seqs * 2}", "--max-num-seqs", env=plan_env,
              args=("--max-num-seqs", str(seqs * 2)), remove_args=("--max-num-seqs",), prior=0.1),
        Trial(f"{base} + prefix caching off", "prefix caching", env=plan_env, args=("--no-enable-prefix-caching",),
              prior=0.05),
        Trial(f"{base} + max-num-batched-tokens 1024", "--max-num-batched-tokens", env=plan_env,
              args=("--max-num-batched-tokens", "1024"), prior=0.05),
    ]
    space = int(plan.env.get("VLLM_CPU_KVCACHE_SPACE", "4"))
    trials.append(Trial(f"{base} + KV cache {space * 2} GiB", "VLLM_CPU_KVCACHE_SPACE",
                        env={**plan_env, "VLLM_CPU_KVCACHE_SPACE": str(space * 2)}, prior=0.02))
    return trials


def accelerator_trials(plan: DeployPlan, platform: str, devices: int) -> list[Trial]:
    """CUDA / Ascend: memory utilization, graph mode, batching, prefix caching, TP, Ascend graph variants."""
    seqs = plan.max_num_seqs
    trials = [
        Trial("engine defaults (eager)", "baseline"),
        Trial("graph mode", "graph mode", graph=True, prior=0.4),
        Trial("graph mode + gpu-memory-utilization 0.95", "--gpu-memory-utilization", graph=True,
              args=("--gpu-memory-utilization", "0.95"), remove_args=("--gpu-memory-utilization",), prior=0.1),
        Trial(f"graph mode + max-num-seqs {seqs * 2}", "--max-num-seqs", graph=True,
              args=("--max-num-seqs", str(seqs * 2)), remove_args=("--max-num-seqs",), prior=0.15),
        Trial("graph mode + max-num-batched-tokens 16384", "--max-num-batched-tokens", graph=True,
              args=("--max-num-batched-tokens", "16384"), prior=0.1),
        Trial("graph mode + prefix caching off", "prefix caching", graph=True, args=("--no-enable-prefix-caching",),
              prior=0.05),
    ]
    for name, knob, args in get_platform(platform).graph_variants:
        trials.append(Trial(name, knob, graph=True, args=args, prior=0.2))
    tp = plan.tensor_parallel
    if devices >= tp * 2:
        trials.append(Trial(f"graph mode + tensor parallel {tp * 2}", "--tensor-parallel-size", graph=True,
                            args=("--tensor-parallel-size", str(tp * 2)), remove_args=("--tensor-parallel-size",),
                            prior=0.2))
    return trials


def build_grid(plan: DeployPlan, platform: str, cores: int = 1, devices: int = 1) -> list[Trial]:
    host = get_platform(platform).host_memory  # the host is the device: threads and KV space are its knobs
    return cpu_trials(plan, cores) if host else accelerator_trials(plan, platform, devices)


def trial_cost_s(trial: Trial, startup_s: dict[str, float], run_s: float, repeats: int) -> float:
    """Estimated seconds for one trial: its start-up (graph mode costs more) plus the repeated benchmark."""
    return startup_s["graph" if trial.graph else "eager"] + run_s * repeats


def cut_to_budget(trials: list[Trial], budget_s: float, startup_s: dict[str, float], run_s: float,
                  repeats: int, max_trials: int | None = None) -> tuple[list[Trial], list[SkippedTrial]]:
    """Baseline first, then by expected gain per second, while the budget lasts and at most
    `max_trials` settings besides the baseline; the rest is skipped, each with its reason."""
    baseline, rest = trials[0], trials[1:]
    order = sorted(rest, key=lambda t: t.prior / trial_cost_s(t, startup_s, run_s, repeats), reverse=True)
    chosen, skipped, spent = [baseline], [], trial_cost_s(baseline, startup_s, run_s, repeats)
    for trial in order:
        cost = trial_cost_s(trial, startup_s, run_s, repeats)
        if max_trials is not None and len(chosen) > max_trials:
            why = reason("tn_over_max_trials", max_trials=max_trials)
        elif spent + cost > budget_s:
            why = reason("tn_over_budget")
        else:
            chosen.append(trial)
            spent += cost
            continue
        skipped.append({"name": trial.name, "knob": trial.knob, "estimated_s": round(cost, 1), "reason": why})
    return chosen, skipped


def apply_trial(command: Command, env: dict[str, str], trial: Trial) -> tuple[Command, dict[str, str]]:
    """The plan's eager command and env with a trial's changes."""
    command = command.without(*trial.remove_args)
    if trial.graph:
        command = command.without("--enforce-eager")
    for flag, value in Command.from_argv(list(trial.args), program_len=0).options:
        command = command.with_option(flag, value)
    new_env = {k: v for k, v in env.items() if k not in trial.unset_env}
    new_env.update(trial.env)
    return command, new_env
