"""The skill's operator gate for models that ship their own code (`--trust-remote-code`): what kind of
custom operator each of the model's Python files uses, and what that means on Ascend.

Read from the files' syntax (ast), never by running them: plain torch works; a Triton kernel needs
verification on the device; a CUDA extension (torch.utils.cpp_extension, load_inline, .cu sources,
CUDA-only packages such as flash_attn) blocks unless the code falls back when it is missing (the
import sits in a try/except ImportError, or behind an availability check). Pure on the texts.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.messages import reason
from llm_adapt.messages.core import Said

TORCH, TRITON, CUDA_FALLBACK, CUDA = "torch", "triton", "cuda-with-fallback", "cuda"
CUDA_PACKAGES = frozenset({"flash_attn", "flash_attn_2_cuda", "xformers", "apex", "mamba_ssm", "causal_conv1d",
                           "deep_gemm", "flashinfer", "fused_dense_lib", "rotary_emb", "dropout_layer_norm",
                           "selective_scan_cuda", "bitsandbytes"})
EXTENSION_CALLS = frozenset({"load_inline", "load", "CUDAExtension", "CppExtension"})
# the skill's conclusion per kind, worded in messages/ (both languages)
CONCLUSION = {kind: reason("og_" + kind.replace("-", "_")) for kind in (TORCH, TRITON, CUDA_FALLBACK, CUDA)}
ORDER = (TORCH, TRITON, CUDA_FALLBACK, CUDA)  # worst last
SOURCE = ("vLLM-Ascend model-adapter skill, SKILL.md 'Operator gate' and workflow-checklist.md §5 "
          "(Torch / Triton / CUDA with fallback / CUDA without fallback)")


@dataclass
class FileFinding:
    file: str
    kind: str  # torch | triton | cuda-with-fallback | cuda
    evidence: list[str] = field(default_factory=list)


@with_config(ConfigDict(extra="allow"))
class FileGate(TypedDict, total=False):
    """One file's finding with its conclusion."""
    file: str
    kind: str
    evidence: list[str]
    conclusion: Said


@with_config(ConfigDict(extra="allow"))
class OperatorGate(TypedDict, total=False):
    """The gate over a model's own code, as inspect.json and adaptation.json hold it ({}: not read)."""
    applies: bool
    reason: Said  # why it does not apply
    kind: str  # the worst file's kind, where it applies
    conclusion: Said
    blocking: bool
    files: list[FileGate]
    source: str


def classify_source(name: str, text: str) -> FileFinding:
    """One Python file's operator kind, with the lines that show it."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return FileFinding(name, TORCH, [f"not parsed ({exc.msg}, line {exc.lineno})"])
    guarded = _guarded_import_lines(tree)
    cuda, fallback, triton = [], [], []
    for node in ast.walk(tree):
        for module in _imported(node):
            top = module.split(".")[0]
            where = f"{name}:{node.lineno}: import {module}"
            if top == "triton":
                triton.append(where)
            elif top in CUDA_PACKAGES or module.startswith("torch.utils.cpp_extension"):
                (fallback if node.lineno in guarded else cuda).append(where)
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            owner = ast.unparse(node.func.value) if isinstance(node.func, ast.Attribute) else ""
            if func in EXTENSION_CALLS and ("cpp_extension" in owner or func in ("load_inline", "CUDAExtension")):
                cuda.append(f"{name}:{node.lineno}: {ast.unparse(node.func)}(...) builds a C++/CUDA extension")
            if "triton" in owner and func == "jit":
                triton.append(f"{name}:{node.lineno}: triton.jit")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                if "triton" in ast.unparse(dec):
                    triton.append(f"{name}:{dec.lineno}: @{ast.unparse(dec)}")
    kind = CUDA if cuda else CUDA_FALLBACK if fallback else TRITON if triton else TORCH
    return FileFinding(name, kind, cuda or fallback or sorted(set(triton)) or ["torch operators only"])


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [node.module]
    return []


def _guarded_import_lines(tree: ast.AST) -> set[int]:
    """Lines of imports inside `try:` blocks that catch a missing package, or under an `if` that asks
    whether it is available: the code has a way on without it."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_missing(h) for h in node.handlers):
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if _imported(n)}
        if isinstance(node, ast.If) and "available" in ast.unparse(node.test).lower():
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if _imported(n)}
    return lines


def _catches_missing(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = {ast.unparse(t) for t in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "OSError"})


def operator_gate(files: dict[str, str], cu_sources: list[str] = ()) -> OperatorGate:
    """The gate over a model's own code: per file, the worst kind and the skill's conclusion."""
    findings = [classify_source(name, text) for name, text in sorted(files.items())]
    findings += [FileFinding(name, CUDA, [f"{name}: CUDA source shipped with the model"]) for name in cu_sources]
    if not findings:
        return {"applies": False, "reason": reason("og_no_code"), "source": SOURCE}
    worst = max((f.kind for f in findings), key=ORDER.index)
    return {"applies": True, "kind": worst, **_conclusion(worst), "blocking": worst == CUDA,
            "files": [asdict(f) | _conclusion(f.kind) for f in findings], "source": SOURCE}


def _conclusion(kind: str) -> FileGate:
    return {"conclusion": CONCLUSION[kind]}


def gate_of_model(model_dir: Path) -> OperatorGate:
    """operator_gate on the Python and .cu files of a model directory (I/O at the edge)."""
    directory = Path(model_dir)
    files = {p.name: p.read_text(errors="replace") for p in sorted(directory.glob("*.py"))}
    cu = [p.name for p in sorted(directory.glob("*.cu")) + sorted(directory.glob("*.cuh"))]
    return operator_gate(files, cu)
