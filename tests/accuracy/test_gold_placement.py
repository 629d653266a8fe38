"""Where the fp32 gold runs (`--reference auto`): the choice on plain numbers, and the precision switches
through stand-in torch / torch_npu modules, so no accelerator is needed to test the branching."""

from types import SimpleNamespace

from llm_adapt.accuracy.gold_placement import Fp32Mode, choose_gold, why_text
from llm_adapt.platforms.cuda import cuda_fp32_mode
from llm_adapt.platforms.npu import npu_fp32_mode

GiB = 2**30
TRUE = Fp32Mode("cuda", True, {"torch.backends.cuda.matmul.allow_tf32": False})


def test_the_gold_goes_to_the_device_when_it_is_true_fp32_and_fits():
    choice = choose_gold(TRUE, 12 * GiB, device_free=139 * GiB, host_free=100 * GiB)
    assert choice.label == "cuda:fp32" and "runs on the cuda" in why_text(choice)


def test_too_large_for_the_device_is_placed_across_device_and_host_else_the_host():
    assert choose_gold(TRUE, 12 * GiB, device_free=4 * GiB, host_free=100 * GiB).label == "auto:fp32"
    assert choose_gold(TRUE, 120 * GiB, device_free=4 * GiB, host_free=20 * GiB).label == "cpu:fp32"


def test_a_device_whose_fp32_is_tf32_or_hf32_never_holds_the_gold():
    tf32 = Fp32Mode("cuda", False, {"torch.backends.cuda.matmul.allow_tf32": True})
    choice = choose_gold(tf32, 1 * GiB, device_free=139 * GiB, host_free=100 * GiB)
    assert choice.label == "cpu:fp32" and "allow_tf32=True" in why_text(choice)
    assert choose_gold(None, 1 * GiB, None, 100 * GiB).label == "cpu:fp32"


def stand_in_torch(allow_tf32=True, precision="high", sticky=False):
    """A torch whose switches may refuse to change (sticky), as a build that forces TF32 would."""
    matmul, cudnn = SimpleNamespace(allow_tf32=allow_tf32), SimpleNamespace(allow_tf32=allow_tf32)
    state = {"precision": precision}

    class Backends:
        cuda = SimpleNamespace(matmul=matmul)

    Backends.cudnn = cudnn

    def set_precision(value):
        if not sticky:
            state["precision"] = value

    module = SimpleNamespace(backends=Backends, set_float32_matmul_precision=set_precision,
                             get_float32_matmul_precision=lambda: state["precision"])
    if sticky:
        class Sticky:
            def __setattr__(self, name, value):
                pass
            allow_tf32 = True
        module.backends.cuda.matmul = Sticky()
    return module


def test_cuda_switches_are_set_off_and_read_back():
    mode = cuda_fp32_mode(stand_in_torch())
    assert mode.true_fp32 and mode.switches["float32_matmul_precision"] == "highest"
    assert mode.switches["torch.backends.cuda.matmul.allow_tf32"] is False
    forced = cuda_fp32_mode(stand_in_torch(sticky=True))
    assert not forced.true_fp32 and forced.switches["torch.backends.cuda.matmul.allow_tf32"] is True


def test_npu_hf32_goes_through_torch_npus_switches():
    torch_npu = SimpleNamespace(npu=SimpleNamespace(matmul=SimpleNamespace(allow_hf32=True),
                                                    conv=SimpleNamespace(allow_hf32=True)))
    mode = npu_fp32_mode(torch_npu)
    assert mode.true_fp32 and torch_npu.npu.matmul.allow_hf32 is False and torch_npu.npu.conv.allow_hf32 is False
    old = npu_fp32_mode(SimpleNamespace(npu=SimpleNamespace()))
    assert not old.true_fp32 and old.switches == {"torch_npu.npu.matmul.allow_hf32": "absent"}
    choice = choose_gold(old, 1 * GiB, device_free=60 * GiB, host_free=100 * GiB)
    assert choice.label == "cpu:fp32"


def test_compare_reference_auto_on_a_cpu_host_places_the_gold_on_the_host_and_says_why(default_model, tmp_path):
    """The wiring end to end on a CPU host (no accelerator): the gold is cpu:fp32 and accuracy.json says why;
    the report renders it in both languages."""
    import json

    from llm_adapt.cli import main

    out = tmp_path / "cmp"
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "a", "category": "knowledge",
                                   "messages": [{"role": "user", "content": "Hi"}]}) + "\n")
    assert main(["compare", "default", "--reference", "auto", "--target", "cpu:fp32", "--prompts", str(prompts),
                 "--max-new-tokens", "2", "--corpus-tokens", "64", "--out", str(out)]) == 0
    settings = json.loads((out / "accuracy.json").read_text())["settings"]
    assert settings["reference"] == "cpu:fp32" and settings["reference_why"]["en"].startswith("no accelerator here")
    assert "本机没有加速卡" in settings["reference_why"]["zh"]
