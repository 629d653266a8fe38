"""msprobe dumps (vLLM-Ascend's layer capture) read as a LayerDump and judged like `llm-adapt layers`.

Two kinds of input:
- tests/fixtures/msprobe/: real dumps written by msprobe's own PyTorch dump on CPU (make_fixture.py
  says how) from a tiny bf16 Llama the tests rebuild: the importer must give the in-process table
  and localize the perturbed layer;
- dumps written here in msprobe's documented layout with vLLM's module names and shapes (flat
  tokens, (hidden, residual) layer outputs, packed requests), on plain tensors.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from llm_adapt.accuracy import capture_records
from llm_adapt.accuracy import layers_served as ls
from llm_adapt.accuracy.msprobe_dump import (
    MsprobeDump,
    compare_dump,
    gold_name,
    prompt_only,
    rank_dirs,
    split_packed,
)
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.reference import Gold, RefPrompt
from llm_adapt.accuracy.runner import Runner, RunnerSpec, tensor_names
from llm_adapt.errors import UsageError
from llm_adapt.inspect import msprobe_config
from llm_adapt.prompts import Prompt

FIXTURES = Path(__file__).parent.parent / "fixtures" / "msprobe"


def _load_fixture_script():
    """make_fixture.py: the fixture's model and sequences, one owner."""
    spec = importlib.util.spec_from_file_location("msprobe_make_fixture", FIXTURES / "make_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_fixture = _load_fixture_script()

FP32 = RunnerSpec("cpu", "fp32")


def no_progress(*_args) -> None:
    pass


# ---- real msprobe dumps of a tiny Llama ----


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from llm_adapt.models.synthetic import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("msprobe") / "tiny", **make_fixture.MODEL)


@pytest.fixture(scope="module")
def gold(tiny) -> Gold:
    """The fp32 gold of the fixture's prompts, captured in process."""
    runner = Runner(FP32, tiny)
    prompts = []
    for i, seq in enumerate(make_fixture.SEQUENCES):
        capture = runner.capture(seq)
        prompts.append(RefPrompt(Prompt(id=f"p{i}", category="test"), seq, [], capture.hidden, capture.logits))
    return Gold(prompts, [], [], [], names=tensor_names(make_fixture.MODEL["num_hidden_layers"]))


def test_real_dump_holds_each_prefill_and_a_decode_step_that_matches_nothing():
    dump = MsprobeDump(FIXTURES / "clean")
    assert dump.steps == 3 and len(dump.records) == 3
    for seq in make_fixture.SEQUENCES:
        tensors, why = dump.layers_for(seq)
        assert why is None and list(tensors) == ["embeddings", "layer 0", "layer 1", "layer 2", "final norm"]
        assert all(t.shape == (len(seq), 64) and t.dtype == torch.float32 for t in tensors.values())
    decode = dump.records[2]
    assert decode["positions"].tolist() == [7]
    assert dump.layers_for(decode["input_ids"].tolist()) == (None, "no record of this prompt's prefill")


def test_importer_reproduces_the_in_process_table(tiny, gold):
    """The dump's rows equal the in-process bf16 capture's rows of the same model (floor_layers): to
    the last digit on the machine that wrote the fixture; 2% leaves room for another CPU's bf16 kernels
    (a perturbed layer moves them 10x and more)."""
    served, missing = ls.served_rows(gold, MsprobeDump(FIXTURES / "clean"))
    in_process = ls.floor_layers(RunnerSpec("cpu", "bf16"), tiny, gold, no_progress)
    assert missing == []
    assert [r["name"] for r in served] == [r["name"] for r in in_process]
    for a, b in zip(served, in_process):
        assert a["rel_l2"] > 0  # bf16 against fp32: a real error, not a copy of the gold
        for key in ("rel_l2", "cos_min", "max_abs"):
            assert a[key] == pytest.approx(b[key], rel=0.02, abs=1e-6), (a["name"], key)


def judge(gold, tiny, name: str):
    opts = CompareOptions(reference=FP32, targets=(), local_factor=2.0)
    source = SimpleNamespace(name="tiny", path=tiny)
    return compare_dump(MsprobeDump(FIXTURES / name), gold, source, opts, "bf16", no_progress,
                        model={"name": "tiny"}, endpoint={}, capture={"mode": "eager", "deploy_mode": "eager"})


def test_clean_dump_passes_at_its_floor(gold, tiny):
    result = judge(gold, tiny, "clean")
    assert result.verdict["status"] == "PASS" and result.first_local_excess is None
    assert result.floor == "cpu:bf16" and result.prompts["captured"] == 2


def test_perturbed_layer_in_the_dumped_model_is_localized(gold, tiny):
    result = judge(gold, tiny, "perturbed")
    assert result.verdict["status"] == "FAIL"
    assert result.first_local_excess["name"] == f"layer {make_fixture.PERTURBED_LAYER}"
    rows = {r["name"]: r for r in result.layers}
    assert rows["layer 0"]["ratio"] == pytest.approx(1.0, abs=0.05)  # before it: at the floor


def test_prompt_only_keeps_the_prompts_positions(gold):
    longer = RefPrompt(gold.prompts[0].prompt, [1, 2], [3, 4], [torch.arange(8.0).reshape(1, 4, 2)], torch.zeros(4, 5))
    cut = prompt_only(Gold([longer], [], [], [], names=["embeddings"])).prompts[0]
    assert cut.sequence == [1, 2] and cut.hidden[0].tolist() == [[[0.0, 1.0], [2.0, 3.0]]]
    assert cut.logits.shape == (2, 5)


# ---- dumps in the documented layout with vLLM's modules, on plain tensors ----


def forward(ids: list[int], positions: list[int], layers: int = 2, seed: int = 0, mrope: bool = False) -> dict:
    """One vLLM forward as its modules return it: flat [T, D]; a layer returns (hidden, residual)."""
    gen = torch.Generator().manual_seed(seed)
    t = len(ids)
    pos = torch.tensor(positions)
    out = {"ids": torch.tensor(ids), "positions": torch.stack([pos] * 3) if mrope else pos,
           "embeddings": torch.randn(t, 4, generator=gen), "layers": [], "norm": torch.randn(t, 4, generator=gen)}
    for _ in range(layers):
        out["layers"].append((torch.randn(t, 4, generator=gen), torch.randn(t, 4, generator=gen)))
    return out


def write_step(root: Path, step: int, fwd: dict, rank: str = "rank0", task: str = "tensor") -> Path:
    """step{N}/{rank}/dump.json + dump_tensor_data/*.pt, as msprobe writes a level L0 tensor dump."""
    folder = root / f"step{step}" / rank
    (folder / "dump_tensor_data").mkdir(parents=True)
    data = {}

    def item(key: str, tensor: torch.Tensor) -> dict:
        torch.save(tensor.clone(), folder / "dump_tensor_data" / f"{key}.pt")
        return {"type": "torch.Tensor", "dtype": str(tensor.dtype), "shape": list(tensor.shape), "data_name": f"{key}.pt"}

    emb = "Module.model.embed_tokens.VocabParallelEmbedding.forward.0"
    data[emb] = {"input_args": [item(f"{emb}.input.0", fwd["ids"])], "input_kwargs": {},
                 "output": [item(f"{emb}.output.0", fwd["embeddings"])]}
    for i, (hidden, residual) in enumerate(fwd["layers"]):
        key = f"Module.model.layers.{i}.LlamaDecoderLayer.forward.0"
        data[key] = {"input_args": [item(f"{key}.input.0", fwd["positions"])], "input_kwargs": {},
                     "output": [item(f"{key}.output.0", hidden), item(f"{key}.output.1", residual)]}
    norm = "Module.model.norm.RMSNorm.forward.0"
    data[norm] = {"input_args": [], "input_kwargs": {},
                  "output": [item(f"{norm}.output.0", fwd["norm"]), item(f"{norm}.output.1", fwd["norm"] * 0)]}
    (folder / "dump.json").write_text(json.dumps({"task": task, "level": "L0", "framework": "pytorch",
                                                  "dump_data_dir": str(folder / "dump_tensor_data"), "data": data}))
    return folder


def test_gold_names_of_msprobe_module_keys():
    assert gold_name("Module.model.embed_tokens.VocabParallelEmbedding.forward.0") == ("embeddings", 0)
    assert gold_name("Module.model.layers.29.Qwen2DecoderLayer.forward.3") == ("layer 29", 3)
    assert gold_name("Module.model.norm.RMSNorm.forward.1") == ("final norm", 1)
    assert gold_name("Module.0.model.layers.2.LlamaDecoderLayer.forward.0") == ("layer 2", 0)  # model given as a list
    for other in ("Module.model.layers.0.mlp.LlamaMLP.forward.0", "Module.lm_head.ParallelLMHead.forward.0",
                  "Module.model.layers.0.input_layernorm.RMSNorm.forward.0", "Tensor.add.0.forward",
                  "Module.model.LlamaModel.forward.0"):
        assert gold_name(other) is None


def test_layer_output_is_hidden_plus_residual(tmp_path):
    fwd = forward([5, 6, 7], [0, 1, 2])
    write_step(tmp_path, 0, fwd)
    tensors, _ = MsprobeDump(tmp_path).layers_for([5, 6, 7])
    hidden, residual = fwd["layers"][1]
    assert torch.equal(tensors["layer 1"], hidden + residual)
    assert not torch.allclose(tensors["layer 1"], hidden)
    assert torch.equal(tensors["final norm"], fwd["norm"])  # (normed, residual): the first
    assert torch.equal(tensors["embeddings"], fwd["embeddings"])


def test_packed_requests_are_split_by_positions(tmp_path):
    """V1 packs a decode token and two prefills into one step; each prefill is found, the decode is not."""
    fwd = forward([9, 1, 2, 3, 4, 7, 8], [12, 0, 1, 2, 3, 0, 1])
    write_step(tmp_path, 0, fwd)
    dump = MsprobeDump(tmp_path)
    assert len(dump.records) == 3
    a, _ = dump.layers_for([1, 2, 3, 4])
    b, _ = dump.layers_for([7, 8])
    assert torch.equal(a["layer 0"], (fwd["layers"][0][0] + fwd["layers"][0][1])[1:5])
    assert torch.equal(b["embeddings"], fwd["embeddings"][5:7])
    assert dump.layers_for([9])[0] is None


def test_split_packed_on_plain_positions():
    record = {"input_ids": torch.arange(6), "positions": torch.tensor([0, 1, 2, 0, 1, 5]),
              "tensors": {"x": torch.arange(6.0).reshape(6, 1)}}
    pieces = split_packed(record)
    assert [p["positions"].tolist() for p in pieces] == [[0, 1, 2], [0, 1], [5]]
    assert pieces[1]["tensors"]["x"].reshape(-1).tolist() == [3.0, 4.0]


def test_prefill_step_is_taken_and_decode_steps_ignored(tmp_path):
    write_step(tmp_path, 0, forward([1, 2, 3], [0, 1, 2], seed=1))
    write_step(tmp_path, 1, forward([4], [3], seed=2))
    write_step(tmp_path, 2, forward([5], [4], seed=3))
    dump = MsprobeDump(tmp_path)
    tensors, why = dump.layers_for([1, 2, 3])
    assert why is None and tensors["layer 0"].shape == (3, 4)
    assert dump.layers_for([1, 2, 3, 4])[1].startswith("the prefill was split")  # only a prefix was a prefill


def test_chunked_prefill_is_stitched_and_a_missing_chunk_named(tmp_path):
    write_step(tmp_path, 0, forward([1, 2], [0, 1], seed=1))
    write_step(tmp_path, 1, forward([3, 4], [2, 3], seed=2))
    tensors, why = MsprobeDump(tmp_path).layers_for([1, 2, 3, 4])
    assert why is None and tensors["layer 0"].shape == (4, 4)
    assert "chunked prefill" in MsprobeDump(tmp_path).layers_for([1, 2, 3, 4, 5, 6])[1]


def test_mrope_positions_use_the_text_row(tmp_path):
    write_step(tmp_path, 0, forward([1, 2, 3], [0, 1, 2], mrope=True))
    assert MsprobeDump(tmp_path).layers_for([1, 2, 3])[1] is None


def test_first_rank_of_each_step_and_any_root_level(tmp_path):
    write_step(tmp_path, 0, forward([1, 2], [0, 1], seed=1), rank="rank1")
    write_step(tmp_path, 0, forward([1, 2], [0, 1], seed=2), rank="rank0")
    write_step(tmp_path, 10, forward([3], [0]), rank="rank0")
    write_step(tmp_path, 2, forward([4], [0]), rank="rank")
    assert [str(p.relative_to(tmp_path)) for p in rank_dirs(tmp_path)] == ["step0/rank0", "step2/rank", "step10/rank0"]
    assert rank_dirs(tmp_path / "step0") == [tmp_path / "step0" / "rank0"]
    assert rank_dirs(tmp_path / "step0" / "rank1") == [tmp_path / "step0" / "rank1"]
    own, _ = MsprobeDump(tmp_path / "step0").layers_for([1, 2])
    assert torch.equal(own["embeddings"], forward([1, 2], [0, 1], seed=2)["embeddings"])


def test_bad_dumps_say_what_and_how(tmp_path):
    with pytest.raises(UsageError, match="not a directory"):
        MsprobeDump(tmp_path / "missing")
    with pytest.raises(UsageError, match="expected step"):
        MsprobeDump(tmp_path)
    write_step(tmp_path / "stats", 0, forward([1], [0]), task="statistics")
    with pytest.raises(UsageError, match="task 'statistics'.*needs task 'tensor' at level 'L0'"):
        MsprobeDump(tmp_path / "stats")
    folder = write_step(tmp_path / "cut", 0, forward([1], [0]))
    (folder / "dump.json").write_text('{"task": "tensor", "lev')
    with pytest.raises(UsageError, match="not readable JSON"):
        MsprobeDump(tmp_path / "cut")
    folder = write_step(tmp_path / "gone", 0, forward([1], [0]))
    next((folder / "dump_tensor_data").glob("*layers.1*output.1.pt")).unlink()
    with pytest.raises(UsageError, match="cannot read"):
        MsprobeDump(tmp_path / "gone")


@pytest.mark.parametrize("argv, words", [
    (["--msprobe-dump", "/no/such/dump"], "msprobe dump not found"),
    (["--msprobe-dump", "/no/such/dump", "--capture-dir", "/tmp/x"], "--capture-dir is the vLLM capture plugin's"),
])
def test_bad_msprobe_input_is_one_line(argv, words, capsys):
    from llm_adapt.cli import main

    assert main(["layers", "default", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err


# ---- the dump_config and the npu plan's opt-in command ----


def test_dump_config_is_a_module_level_tensor_dump_of_the_layers():
    config = msprobe_config.dump_config("/data/d")
    assert (config["task"], config["level"], config["dump_path"], config["step"]) == ("tensor", "L0", "/data/d", [])
    assert config["tensor"]["list"] == msprobe_config.MODULE_LIST == make_fixture.LIST  # what made the fixture


@pytest.mark.parametrize("name, kept", [
    ("Module.model.embed_tokens.VocabParallelEmbedding.forward.0", True),
    ("Module.model.layers.3.LlamaDecoderLayer.forward.0", True),
    ("Module.model.layers.3.Qwen3DecoderLayer.forward.1", True),
    ("Module.model.norm.RMSNorm.forward.0", True),
    ("Module.model.layers.3.mlp.LlamaMLP.forward.0", False),
    ("Module.model.layers.3.post_attention_layernorm.RMSNorm.forward.0", False),
    ("Module.lm_head.ParallelLMHead.forward.0", False),
])
def test_list_keeps_exactly_the_compared_modules(name, kept):
    """msprobe 26.2.0 keeps an L0 module when any `list` entry is a substring of its name."""
    assert any(s in name for s in msprobe_config.MODULE_LIST) is kept
    assert (gold_name(name) is not None) is kept


def test_npu_plan_has_the_opt_in_msprobe_capture(default_model):
    from llm_adapt.command import Command
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect

    options = PlanOptions(model_path=str(default_model.path), served_model_name="m", device_memory_gib=64)
    npu = run_inspect(default_model, options, "npu").plan
    entry = npu.layer_dump
    assert entry["argv"][:len(npu.command("eager").argv())] == npu.command("eager").argv() and "--enforce-eager" in entry["argv"]
    additional = Command.from_argv(entry["argv"]).get("--additional-config")
    assert json.loads(additional) == {"dump_config": msprobe_config.dump_config()}
    assert shlex.split(entry["command"].replace("\\\n", " "))[-1] == entry["argv"][-1]  # quoted for the shell
    assert "--msprobe-dump ./msprobe_dump" in entry["then"] and "msprobe_guide.md" in entry["source"]
    assert run_inspect(default_model, options, "cpu").plan.layer_dump is None


def test_with_an_endpoint_each_prompt_is_sent_alone_then_the_dump_is_read(tiny_llama, tmp_path, monkeypatch):
    """--endpoint: the suite's prompt tokens (no continuation) go out one prefill each before the dump
    is read; a dump without them says so in one line."""
    from transformers import AutoTokenizer

    from llm_adapt.accuracy import msprobe_dump
    from llm_adapt.engines import preflight
    from llm_adapt.engines.endpoint import endpoint_from_url
    from llm_adapt.errors import AdaptError
    from llm_adapt.prompts import load_prompts, render

    sent = []
    monkeypatch.setattr(preflight, "resolve_model_name", lambda endpoint: ("served", {}))
    monkeypatch.setattr(capture_records, "send_prefills", lambda client, switch, seqs, progress: sent.extend(seqs) or [None] * len(seqs))
    write_step(tmp_path, 0, forward([1, 2, 3], [0, 1, 2]))
    opts = CompareOptions(reference=FP32, targets=(), prompts="quick", max_new_tokens=8)
    source = SimpleNamespace(name="tiny", path=tiny_llama)
    with pytest.raises(AdaptError, match="no prompt of the suite has its prefill in the msprobe dump"):
        msprobe_dump.run_msprobe_layers(source, tmp_path, opts, "bf16", {"mode": "eager"}, no_progress,
                                        endpoint_from_url("http://127.0.0.1:9/v1"))
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    assert len(sent) == len(load_prompts("quick")) > 1
    assert sent[0] == render(tokenizer, load_prompts("quick")[0])  # the prompt alone: the prefill a request runs
