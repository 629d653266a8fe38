"""The adaptation strategy: decided on plain data, and once for real on an architecture vLLM lacks."""

import importlib.util
import json
import sys

import pytest

from llm_adapt.inspect.strategy import BACKEND, DIRECT, PLUGIN, BackendTrial, decide, plugin_files, plugin_name

NATIVE = {"vllm": "native", "registry": "vLLM 0.0 (test)", "strategy": "s", "detail": "d"}
FALLBACK = {"vllm": "transformers-backend", "registry": "vLLM 0.0 (test)", "strategy": "s", "detail": "not registered"}


def trial(started, answered, cause=None):
    return BackendTrial(started, answered, 12.3, cause, ["python", "-m", "vllm"], "' Paris'" if answered else None)


def test_native_is_direct_registration_without_a_trial():
    s = decide("LlamaForCausalLM", NATIVE, None)
    assert s.decision == DIRECT and s.trial is None and "registered natively" in s.evidence[0]


def test_untried_fallback_says_it_was_not_tried():
    s = decide("OddForCausalLM", FALLBACK, None)
    assert s.decision == f"{BACKEND} (not tried)" and "--try-backend" in s.evidence[-1]


def test_backend_that_started_and_answered_is_the_strategy():
    s = decide("OddForCausalLM", FALLBACK, trial(True, True))
    assert s.decision == BACKEND and "started, answered" in s.evidence[1] and s.plugin is None


@pytest.mark.parametrize("started", [False, True])
def test_backend_failure_gives_the_cause_and_the_plugin(started):
    s = decide("OddForCausalLM", FALLBACK, trial(started, False, "ValueError: not compatible with vLLM"),
               {"path": "/x", "files": []})
    assert s.decision == PLUGIN and "not compatible with vLLM" in s.headline and s.plugin == {"path": "/x", "files": []}
    assert s.evidence[-1] == "engine: ValueError: not compatible with vLLM"


def test_plugin_skeleton_registers_the_architecture():
    files = plugin_files("TinyOddForCausalLM", [("norm", "LayerNorm"), ("activation", "SquaredReLU")])
    pkg = plugin_name("TinyOddForCausalLM")
    assert pkg == "vllm_plugin_tiny_odd"
    assert '[project.entry-points."vllm.general_plugins"]' in files["pyproject.toml"]
    assert f'register = "{pkg}:register"' in files["pyproject.toml"]
    init = files[f"{pkg}/__init__.py"]
    assert f'ModelRegistry.register_model("TinyOddForCausalLM", "{pkg}.model:TinyOddForCausalLM")' in init
    assert "#   activation: SquaredReLU" in files[f"{pkg}/model.py"]
    for name, text in files.items():
        if name.endswith(".py"):
            compile(text, name, "exec")


# A causal LM transformers does not know, saved with its code (trust_remote_code). Its attention
# class does not use transformers' attention interface, so vLLM's Transformers backend refuses it.
MODELING = '''
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput


class TinyOddConfig(PretrainedConfig):
    model_type = "tiny_odd"

    def __init__(self, vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=2, max_position_embeddings=128, **kwargs):
        self.vocab_size, self.hidden_size, self.intermediate_size = vocab_size, hidden_size, intermediate_size
        self.num_hidden_layers, self.num_attention_heads = num_hidden_layers, num_attention_heads
        self.max_position_embeddings = max_position_embeddings
        super().__init__(**kwargs)


class SquaredReLU(nn.Module):
    def forward(self, x):
        return F.relu(x) ** 2


class TinyOddAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, **kwargs):
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, h))


class TinyOddBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(config.hidden_size), nn.LayerNorm(config.hidden_size)
        self.attn = TinyOddAttention(config)
        self.fc_in = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act_fn = SquaredReLU()
        self.fc_out = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x, **kwargs):
        x = x + self.attn(self.ln_1(x))
        return x + self.fc_out(self.act_fn(self.fc_in(self.ln_2(x))))


class TinyOddForCausalLM(PreTrainedModel):
    config_class = TinyOddConfig
    base_model_prefix = "odd"

    def __init__(self, config):
        super().__init__(config)
        self.wte = nn.Embedding(config.vocab_size, config.hidden_size)
        self.wpe = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.blocks = nn.ModuleList(TinyOddBlock(config) for _ in range(config.num_hidden_layers))
        self.ln_f = nn.LayerNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, **kwargs):
        x = self.wte(input_ids) + self.wpe(torch.arange(input_ids.shape[1], device=input_ids.device))
        for block in self.blocks:
            x = block(x)
        return CausalLMOutput(logits=self.lm_head(self.ln_f(x)))
'''


@pytest.fixture(scope="module")
def odd_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("odd") / "tiny-odd"
    out.mkdir()
    (out / "modeling_tiny_odd.py").write_text(MODELING)
    spec = importlib.util.spec_from_file_location("modeling_tiny_odd", out / "modeling_tiny_odd.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["modeling_tiny_odd"] = module
    spec.loader.exec_module(module)
    module.TinyOddForCausalLM(module.TinyOddConfig()).save_pretrained(out)
    del sys.modules["modeling_tiny_odd"]
    cfg = json.loads((out / "config.json").read_text())
    cfg["auto_map"] = {"AutoConfig": "modeling_tiny_odd.TinyOddConfig",
                       "AutoModelForCausalLM": "modeling_tiny_odd.TinyOddForCausalLM"}
    (out / "config.json").write_text(json.dumps(cfg))
    return out


def inspect(path, trust):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    source = resolve_model(str(path))
    options = PlanOptions(model_path=str(path), served_model_name="odd", kv_cache_space_gib=1, max_model_len=128,
                          trust_remote_code=trust)
    return run_inspect(source, options, "cpu")


def test_custom_code_is_walked_when_trusted(odd_model):
    result = inspect(odd_model, trust=True)
    inv = result.inventory
    assert inv["source"] == "model code" and inv["norm"] == "layernorm" and inv["activation"] == "SquaredReLU"
    assert "attn.qkv" in inv["biased"] and inv["rope"] == "none"
    assert "unusual-activation" in {c["id"] for c in result.caveats}
    assert result.strategy["decision"] == f"{BACKEND} (not tried)"
    untrusted = inspect(odd_model, trust=False).inventory
    assert untrusted["source"] == "config only" and "--trust-remote-code was not given" in untrusted["source_note"]


@pytest.mark.slow
def test_vllm_lacks_it_and_its_transformers_backend_refuses_it(odd_model, tmp_path, capsys):
    """One real vLLM start (about 20-30 s here), through the CLI: the engine's cause, then a plugin skeleton."""
    from llm_adapt.cli import main

    code = main(["inspect", str(odd_model), "--platform", "cpu", "--kv-cache-space", "1", "--max-model-len", "128",
                 "--trust-remote-code", "--try-backend", "--out", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    strategy = json.loads(out)["strategy"]
    assert code == 1 and "plugin skeleton in" in err
    assert strategy["trial"]["started"] is False, strategy["trial"]
    assert "not compatible with vLLM" in strategy["trial"]["cause"]
    assert strategy["decision"] == PLUGIN and "--model-impl" in strategy["trial"]["argv"]
    pkg = tmp_path / plugin_name("TinyOddForCausalLM")
    assert 'register_model("TinyOddForCausalLM"' in (pkg / plugin_name("TinyOddForCausalLM") / "__init__.py").read_text()
    assert strategy["plugin"]["path"] == str(pkg)
    assert json.loads((tmp_path / "inspect.json").read_text())["strategy"] == strategy

def test_the_reason_under_vllm_s_pydantic_wrapper_is_the_cause():
    from llm_adapt.engines.backend_trial import pydantic_reason

    log = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
           "  Value error, The Transformers implementation of 'X' is not compatible with vLLM. [type=value_error, "
           "input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]\n")
    assert pydantic_reason(log) == "The Transformers implementation of 'X' is not compatible with vLLM."
    assert pydantic_reason("RuntimeError: boom\n") is None


def test_cli_try_backend_wiring_without_an_engine(odd_model, tmp_path, capsys, monkeypatch):
    """The same CLI path as the slow test, with the engine's answer stubbed: exit code, JSON and files."""
    import llm_adapt.engines.backend_trial as strategy_mod
    from llm_adapt.cli import main

    monkeypatch.setattr(strategy_mod, "try_transformers_backend",
                        lambda result, directory, timeout=600.0: trial(False, False, "ValueError: refused"))
    code = main(["inspect", str(odd_model), "--platform", "cpu", "--kv-cache-space", "1", "--max-model-len", "128",
                 "--trust-remote-code", "--try-backend", "--out", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    strategy = json.loads(out)["strategy"]
    assert code == 1 and "plugin skeleton in" in err and strategy["decision"] == PLUGIN
    assert (tmp_path / plugin_name("TinyOddForCausalLM") / "pyproject.toml").is_file()
