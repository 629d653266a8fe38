"""`llm-adapt compare` from the command line: result on disk, bad input in one line."""

import json

import pytest

from llm_adapt.cli import main
from llm_adapt.prompts import corpus_texts


def test_compare_writes_accuracy_json(capsys, tiny_llama, tmp_path):
    code = main(["compare", str(tiny_llama), "--target", "cpu:bf16", "--quant", "int8-tensor", "--prompts", "quick",
                 "--max-new-tokens", "4", "--corpus-tokens", "64", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "Overall" in out
    data = json.loads((tmp_path / "accuracy.json").read_text())
    assert data["kind"] == "accuracy" and [t["label"] for t in data["targets"]] == ["cpu:bf16", "cpu:bf16+int8-tensor"]
    # the first 64 tokens of each corpus text, not the whole corpus (about 2,400 tokens)
    texts = len(corpus_texts())
    assert data["settings"]["corpus_tokens"] == 64 and 0 < data["prompts"]["corpus_tokens"] <= 64 * texts


def test_compare_of_a_planted_fault_exits_1_and_of_an_identical_copy_0(capsys, tiny_llama, tmp_path):
    """The exit code a CI step gates on: a --target-model with one layer's output projection scaled 1.3x is FAIL
    and exits 1; a byte-identical copy is PASS and exits 0 (it exited 0 on FAIL before)."""
    import shutil

    from safetensors.torch import load_file, save_file

    faulty, same = tmp_path / "faulty", tmp_path / "same"
    shutil.copytree(tiny_llama, faulty)
    shutil.copytree(tiny_llama, same)
    weights = load_file(faulty / "model.safetensors")
    name = next(k for k in weights if k.endswith("layers.1.self_attn.o_proj.weight"))
    weights[name] = weights[name] * 1.3
    save_file(weights, faulty / "model.safetensors", metadata={"format": "pt"})
    base = ["compare", str(tiny_llama), "--target", "cpu:fp32", "--prompts", "quick", "--max-new-tokens", "4",
            "--corpus-tokens", "64", "--json"]
    assert main(base + ["--target-model", str(faulty)]) == 1
    assert json.loads(capsys.readouterr().out)["verdict"]["status"] == "FAIL"
    assert main(base + ["--target-model", str(same)]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"]["status"] == "PASS"


@pytest.mark.parametrize("extra,code,needle", [
    (["--target", "npu:bf16"], 2, "torch_npu"),
    (["--target", "cpu:fp8"], 2, "DEVICE:DTYPE"),
    (["--prompts", "BADFILE"], 2, "not JSON"),
    (["--prompts", "EMPTYMSG"], 2, "needs 'messages'"),
    (["--prompts", "/no/such.jsonl"], 2, "not a suite"),
    (["--max-new-tokens", "0"], 2, "greater than 0"),
    (["--corpus-tokens", "0"], 2, "greater than 0"),
    (["--target-model", "/no/such/dir"], 2, "not a model directory"),
])
def test_compare_bad_input(capsys, tiny_llama, tmp_path, extra, code, needle):
    (tmp_path / "bad.jsonl").write_text('{"prompt": "hi"}\n{not json\n')
    (tmp_path / "empty.jsonl").write_text('{"id": "x", "messages": []}\n')
    extra = [e.replace("BADFILE", str(tmp_path / "bad.jsonl")).replace("EMPTYMSG", str(tmp_path / "empty.jsonl")) for e in extra]
    try:
        got = main(["compare", str(tiny_llama), "--out", str(tmp_path / "o")] + extra)
    except SystemExit as exc:
        got = exc.code
    err = capsys.readouterr().err
    assert got == code and needle in err.strip().splitlines()[-1] and "Traceback" not in err


def test_unwritable_out_dir_fails_before_work(capsys, tiny_llama, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    got = main(["compare", str(tiny_llama), "--out", str(blocker / "sub")])
    assert got == 2 and "cannot write results" in capsys.readouterr().err  # the user's --out: exit 2
