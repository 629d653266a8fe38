"""The tutorial's FAQ names the operators of the model's own code that need a custom op on Ascend, one entry per
file, from the operator gate (inspect/operator_gate.py), and none where the code is plain torch or absent."""

from llm_adapt.inspect.operator_gate import operator_gate
from llm_adapt.messages import message
from llm_adapt.upstream.faq import _custom_ops

CUDA_ONLY = "import torch\nfrom flash_attn import flash_attn_func\n"
GUARDED = "try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n"
TRITON = "import triton\n\n@triton.jit\ndef kernel(x):\n    pass\n"
TORCH = "import torch\n\ndef f(x):\n    return torch.relu(x)\n"


def titles_and_fixes(files: dict[str, str]) -> list[tuple[str, str]]:
    return [(message(e.title, "en"), message(e.solution, "en")) for e in _custom_ops(operator_gate(files))]


def test_each_file_that_needs_a_custom_op_has_its_entry_with_its_evidence():
    entries = _custom_ops(operator_gate({"attn.py": CUDA_ONLY, "fast.py": GUARDED, "kern.py": TRITON,
                                          "modeling.py": TORCH}))
    titles = [message(e.title, "en") for e in entries]
    assert titles == ["A custom operator in the model's own code (attn.py)",
                      "A custom operator in the model's own code (fast.py)",
                      "A custom operator in the model's own code (kern.py)"]
    cuda, fallback, triton = entries
    assert "attn.py:2: import flash_attn" in message(cuda.cause, "en")
    assert "AscendC" in message(cuda.solution, "en") and "fallback path" in message(fallback.solution, "en")
    assert "triton-ascend" in message(triton.solution, "en")
    for e in entries:
        for part in (e.title, e.phenomenon, e.cause, e.solution):
            assert message(part, "zh") and message(part, "zh") != message(part, "en")


def test_plain_torch_or_no_code_has_no_custom_op_entry():
    assert titles_and_fixes({"modeling.py": TORCH}) == []
    assert _custom_ops(operator_gate({})) == [] and _custom_ops(None) == [] and _custom_ops({}) == []
