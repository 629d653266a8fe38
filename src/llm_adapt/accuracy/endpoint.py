"""Black-box accuracy of a running server against the in-process gold reference.

Sections, each saved as it finishes (a server dying mid-way leaves the rest marked 'not run'):
tokenization (the server's rendering of each chat vs ours), teacher-forced log-probs on the
reference's greedy continuation (prompt_logprobs), corpus perplexity, and free-running greedy
decoding with near-tie classification. The in-process noise floor (the reference's device at
the served dtype) is put through the same top-k view, so the server is judged against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar

import httpx
import numpy as np
import torch

from llm_adapt.accuracy import endpoint_metrics as em
from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.compare import CompareOptions, Gold, greedy_row, measure_reference
from llm_adapt.accuracy.metrics import benchmark_ratio_status, safe_ratio
from llm_adapt.accuracy.prompts import load_prompts
from llm_adapt.accuracy.runner import Runner, RunnerSpec
from llm_adapt.accuracy.verdict import check, worst
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.engines.preflight import resolve_model_name
from llm_adapt.models.source import ModelSource
from llm_adapt.results import StageResult

SECTIONS = ("tokenization", "teacher_forced", "perplexity", "greedy")


class EndpointAccuracyResult(StageResult):
    KIND: ClassVar[str] = "endpoint_accuracy"

    endpoint: dict[str, Any]
    model: str
    reference: str
    floor: str | None
    settings: dict[str, Any]
    sections: dict[str, dict[str, Any]]  # name -> {"status": done | not run | unsupported, ...}
    verdict: dict[str, Any] | None = None


class ServerGone(Exception):
    pass


class EndpointClient:
    def __init__(self, endpoint: Endpoint, model: str, timeout_s: float = 300.0):
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        self.endpoint, self.model = endpoint, model
        self.http = httpx.Client(headers=headers, timeout=timeout_s)

    def post(self, url: str, payload: dict) -> httpx.Response:
        try:
            return self.http.post(url, json={"model": self.model, **payload})
        except httpx.TransportError as exc:
            raise ServerGone(f"the server stopped answering ({type(exc).__name__})") from None

    def v1(self, path: str, payload: dict) -> httpx.Response:
        return self.post(f"{self.endpoint.base_url}/{path}", payload)

    def root(self, path: str, payload: dict) -> httpx.Response:
        return self.post(self.endpoint.root_url + path, payload)


def compare_endpoint(source: ModelSource, endpoint: Endpoint, opts: CompareOptions, floor: RunnerSpec | None,
                     out: Path, progress: Callable[[str, int, int], None] | None = None,
                     gold: Gold | None = None) -> EndpointAccuracyResult:
    """`gold` lets a run reuse the reference it already measured for the in-process comparison."""
    from transformers import AutoTokenizer

    progress = progress or (lambda *a: None)
    model, _ = resolve_model_name(endpoint)
    client = EndpointClient(endpoint, model)
    tokenizer = AutoTokenizer.from_pretrained(source.path)
    gold = gold or measure_reference(source, tokenizer, load_prompts(opts.prompts), opts, progress)
    floor_lp = _floor_logprobs(floor, source, gold, progress) if floor else None
    result = EndpointAccuracyResult(
        endpoint=endpoint.redacted(), model=model, reference=opts.reference.label, floor=floor.label if floor else None,
        settings={"prompts": opts.prompts, "max_new_tokens": opts.max_new_tokens, "top_k": opts.top_k,
                  "tie_margin": opts.tie_margin},
        sections={name: {"status": "not run", "reason": "not reached"} for name in SECTIONS})
    steps = {"tokenization": lambda: _tokenization(client, gold, tokenizer),
             "teacher_forced": lambda: _teacher_forced(client, gold, floor_lp, opts.top_k),
             "perplexity": lambda: _perplexity(client, gold),
             "greedy": lambda: _greedy(client, gold, tokenizer, opts)}
    for i, name in enumerate(SECTIONS):
        progress("endpoint accuracy", i, len(SECTIONS))
        try:
            result.sections[name] = {"status": "done", **steps[name]()}
        except ServerGone as exc:
            for rest in SECTIONS[i:]:
                result.sections[rest] = {"status": "not run", "reason": str(exc)}
            break
        except _Unsupported as exc:
            result.sections[name] = {"status": "unsupported", "reason": str(exc)}
        result.save(out / "endpoint_accuracy.json")
    progress("endpoint accuracy", len(SECTIONS), len(SECTIONS))
    result.verdict = judge_endpoint(result.sections)
    result.save(out / "endpoint_accuracy.json")
    return result


class _Unsupported(Exception):
    pass


def _floor_logprobs(floor: RunnerSpec, source: ModelSource, gold: Gold, progress) -> list[torch.Tensor]:
    runner = Runner(floor, source.path)
    out = []
    for i, ref in enumerate(gold.prompts):
        progress(f"floor {floor.label}", i, len(gold.prompts))
        out.append(m.log_softmax64(runner.capture(ref.sequence).logits))
    progress(f"floor {floor.label}", len(gold.prompts), len(gold.prompts))
    runner.close()
    return out


def _tokenization(client: EndpointClient, gold: Gold, tokenizer) -> dict[str, Any]:
    mismatches, checked = [], 0
    for ref in gold.prompts:
        payload = ({"prompt": ref.prompt.text, "add_special_tokens": True} if ref.prompt.text is not None else
                   {"messages": ref.prompt.as_messages(), "add_generation_prompt": True})
        reply = client.root("/tokenize", payload)
        if reply.status_code != 200:
            raise _Unsupported(f"POST /tokenize answered {reply.status_code}: cannot check the server's rendering")
        checked += 1
        tokens = reply.json()["tokens"]
        if tokens != ref.input_ids:
            mismatches.append({"id": ref.prompt.id, "ours": tokenizer.decode(ref.input_ids),
                               "server": tokenizer.decode(tokens), "ours_tokens": len(ref.input_ids),
                               "server_tokens": len(tokens)})
    return {"checked": checked, "mismatches": mismatches}


def _prompt_logprobs(client: EndpointClient, ids: list[int], k: int) -> list[dict[int, dict]]:
    reply = client.v1("completions", {"prompt": ids, "max_tokens": 1, "temperature": 0, "prompt_logprobs": k})
    if reply.status_code != 200:
        raise _Unsupported(f"prompt_logprobs request answered {reply.status_code}: {reply.text[:160]}")
    plp = reply.json()["choices"][0].get("prompt_logprobs")
    if not plp:
        raise _Unsupported("the server ignored prompt_logprobs (no log-probs in the answer)")
    return [{int(t): v for t, v in (pos or {}).items()} for pos in plp]


def _teacher_forced(client, gold: Gold, floor_lp, k: int) -> dict[str, Any]:
    rows, floor_rows = [], []
    for n, ref in enumerate(gold.prompts):
        server = _prompt_logprobs(client, ref.sequence, k)
        ref_lp = m.log_softmax64(ref.logits)
        for p in range(1, len(ref.sequence)):
            known = {t: v["logprob"] for t, v in server[p].items()}
            top1 = min(server[p], key=lambda t: server[p][t].get("rank", 10**9))
            rows.append(em.position_stats(ref_lp[p - 1], ref.sequence[p], known, top1, k))
            if floor_lp is not None:
                view, f_top1 = em.as_server_view(floor_lp[n][p - 1], ref.sequence[p], k)
                floor_rows.append(em.position_stats(ref_lp[p - 1], ref.sequence[p], view, f_top1, k))
    return {"server": em.summarize(rows), "floor": em.summarize(floor_rows) if floor_rows else None,
            "kl_note": "KL on the top-k support (coarse-grained): a lower bound on full-vocabulary KL"}


def _perplexity(client, gold: Gold) -> dict[str, Any]:
    server_nll = []
    for window in gold.corpus:
        plp = _prompt_logprobs(client, window, 1)
        server_nll.append(np.array([-plp[p][window[p]]["logprob"] for p in range(1, len(window))]))
    ref, srv = np.concatenate(gold.corpus_nll), np.concatenate(server_nll)
    return {"ref": float(np.exp(ref.mean())), "server": float(np.exp(srv.mean())),
            "ln_ratio": m.ln_ppl_ratio(ref, srv), "tokens": int(len(ref))}


def _greedy(client, gold: Gold, tokenizer, opts: CompareOptions) -> dict[str, Any]:
    rows = []
    for ref in gold.prompts:
        generated, tops = _server_greedy(client, ref, opts)
        rows.append(_greedy_row(ref, generated, tops, tokenizer, opts, gold.eos_ids))
    from llm_adapt.accuracy.compare import _by_category

    return {"rows": rows, "by_category": _by_category(rows)}


def _server_greedy(client, ref, opts) -> tuple[list[int], list[dict[int, float]]]:
    common = {"max_tokens": opts.max_new_tokens, "temperature": 0, "logprobs": True, "top_logprobs": opts.top_k,
              "return_token_ids": True, "return_tokens_as_token_ids": True}
    if ref.prompt.text is not None:
        reply = client.v1("completions", {"prompt": ref.prompt.text, **common, "logprobs": opts.top_k})
    else:
        reply = client.v1("chat/completions", {"messages": ref.prompt.as_messages(), **common})
    if reply.status_code != 200:
        raise _Unsupported(f"greedy request answered {reply.status_code}: {reply.text[:160]}")
    choice = reply.json()["choices"][0]
    ids = choice.get("token_ids")
    content = ((choice.get("logprobs") or {}).get("content")) or []
    tops = [{_token_id(t["token"]): t["logprob"] for t in (c.get("top_logprobs") or [])} for c in content]
    if ids is None:
        if not content:
            raise _Unsupported("the server returned neither token ids nor token logprobs")
        ids = [_token_id(c["token"]) for c in content]
    return list(ids), tops


def _token_id(token: str) -> int:
    return int(token.split(":", 1)[1]) if token.startswith("token_id:") else -1


def _greedy_row(ref, generated, tops, tokenizer, opts, eos_ids: list[int]) -> dict[str, Any]:
    if ref.generated and ref.generated[-1] in eos_ids and generated == ref.generated[:-1]:
        generated = list(ref.generated)  # the server left out the final EOS the reference kept

    def mutual(k: int, pos: int) -> bool | None:
        server_top = set(tops[k]) if k < len(tops) else set()
        if not server_top:
            return None
        ref_top = set(ref.logits[pos].topk(opts.top_k).indices.tolist())
        return bool(generated[k] in ref_top and ref.generated[k] in server_top)

    return greedy_row(ref, generated, tokenizer, opts.tie_margin, mutual)


def judge_endpoint(sections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    checks = []
    tok = sections["tokenization"]
    if tok["status"] == "done":
        n = len(tok["mismatches"])
        checks.append(check("server tokenization / chat template", f"{n} of {tok['checked']} prompts differ",
                            "pass" if n == 0 else "fail", "0 differences", "the server must see the tokens we judge"))
    tf = sections["teacher_forced"]
    if tf["status"] == "done" and tf.get("floor"):
        s, f = tf["server"], tf["floor"]
        ratio = safe_ratio(s["kl_lb_mean"], f["kl_lb_mean"])
        checks.append(check("top-k KL / noise floor", None if ratio is None else round(ratio, 4),
                            benchmark_ratio_status(ratio), "<= 1 pass, <= 2 warn, else fail",
                            "msprobe benchmark ratio on llama.cpp's KL (top-k lower bound), vs the in-process floor"))
        allowed = f["same_top1"] - 2 * ((s["same_top1_err"] or 0) ** 2 + (f["same_top1_err"] or 0) ** 2) ** 0.5
        checks.append(check("same top-1 rate", f"{s['same_top1']:.4f} vs floor {f['same_top1']:.4f}",
                            "pass" if s["same_top1"] >= allowed else "warn", "within 2 standard errors of the floor",
                            "llama.cpp's same-top rate"))
    greedy = sections["greedy"]
    if greedy["status"] == "done":
        genuine = sum(1 for r in greedy["rows"] if r["divergence"] == "genuine")
        checks.append(check("genuine greedy divergences", genuine, "pass" if genuine == 0 else "warn", "0 pass, else warn",
                            "divergences outside the tie margin (vLLM tests' idea)"))
    missing = [n for n, s in sections.items() if s["status"] != "done"]
    status = worst([c["status"] for c in checks]) if checks else "WARN"
    reasons = [f"{c['name']}: {c['value']}" for c in checks if c["status"] in ("warn", "fail")]
    reasons += [f"{n}: {sections[n]['status']} ({sections[n].get('reason')})" for n in missing]
    if missing and status == "PASS":
        status = "WARN"
    return {"status": status, "checks": checks, "reasons": reasons}
