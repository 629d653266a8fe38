"""Black-box accuracy of a running server against the in-process gold reference.

Sections, each saved as it finishes (a server dying mid-way leaves the rest marked 'not run'):
tokenization (the server's rendering of each chat vs ours), teacher-forced log-probs on the
reference's greedy continuation (prompt_logprobs), corpus perplexity, and free-running greedy
decoding with near-tie classification. The in-process noise floor (the reference's device at
the served dtype) is put through the same top-k view, so the server is judged against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from llm_adapt import rundir
from llm_adapt.accuracy import endpoint_metrics as em
from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy import shapes
from llm_adapt.accuracy.diagnosis import diagnose
from llm_adapt.accuracy.endpoint_requests import (
    IN_FLIGHT,
    NONFINITE,
    TOO_LONG,
    Reply,
    first_gone,
    greedy_request,
    prompt_logprobs_of,
    prompt_logprobs_request,
    send_all,
    tokenize_request,
)
from llm_adapt.accuracy.greedy import by_category, greedy_row
from llm_adapt.accuracy.measure import FloorData, measure_floor
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.reference import Gold, activation_peaks, measure_reference
from llm_adapt.accuracy.result import (  # its typed result, declared where the report reads it
    EndpointAccuracyResult,
    EndpointSection,
    GreedyRow,
    SkippedPrompt,
    ViewSpread,
)
from llm_adapt.accuracy.runner import RunnerSpec
from llm_adapt.accuracy.verdict import ENDPOINT_SECTIONS, K_SPREAD, clean_kl_bound, genuine_count, judge_endpoint
from llm_adapt.accuracy.verdict.prompts import PromptKL
from llm_adapt.engines.client import EndpointClient
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.engines.preflight import resolve_model_name
from llm_adapt.messages import reason
from llm_adapt.models.source import ModelSource
from llm_adapt.prompts import load_prompts, plain_text

SECTIONS = ENDPOINT_SECTIONS


def compare_endpoint(source: ModelSource, endpoint: Endpoint, opts: CompareOptions, floor: RunnerSpec | None,
                     out: Path, progress: Callable[[str, int, int], None] | None = None,
                     gold: Gold | None = None, floor_data: "FloorData | None" = None) -> EndpointAccuracyResult:
    """`gold` lets a run reuse the reference it already measured for the in-process comparison;
    `floor_data` a floor already measured on that gold."""
    from llm_adapt.models.tokenizer import load_tokenizer

    progress = progress or (lambda *a: None)
    model, info = resolve_model_name(endpoint)
    client = EndpointClient(endpoint, model)
    tokenizer = load_tokenizer(source.path)
    served_len = served_max_model_len(info.get("listed"), model)
    gold = gold or measure_reference(source, tokenizer, load_prompts(opts.prompts), opts, progress, served_len)
    fl = floor_data or (measure_floor(floor, source, gold, tokenizer, opts, progress,
                                      fits=lambda ref: served_len is None or len(ref.sequence) + 1 <= served_len).data
                        if floor else None)
    result = EndpointAccuracyResult(
        endpoint=endpoint.redacted(), model=model, gold_model=source.name, reference=opts.reference.label,
        floor=floor.label if floor else None,
        settings={"prompts": opts.prompts, "max_new_tokens": opts.max_new_tokens, "top_k": opts.top_k,
                  "tie_margin": opts.tie_margin, "served_max_model_len": served_len,
                  "floor_spread": fl.spread if fl else None},
        sections={name: {"status": "not run", "reason": reason("es_not_reached")} for name in SECTIONS},
        gold_logits=gold.sharpness(opts.tie_margin))
    def tick(name: str):
        return lambda done, total: progress(f"endpoint accuracy: {name}", done, total)

    steps = {"tokenization": lambda: _tokenization(client, gold, tokenizer, tick("tokenization")),
             "teacher_forced": lambda: _teacher_forced(client, gold, fl, opts.top_k, served_len, tick("teacher-forced"),
                                                       opts.in_flight, opts.block_size, opts.chunk_budget),
             "perplexity": lambda: _perplexity(client, gold, fl, served_len, tick("perplexity"), opts.in_flight),
             "greedy": lambda: _greedy(client, gold, tokenizer, opts, fl, served_len, tick("greedy"))}
    for i, name in enumerate(SECTIONS):
        progress("endpoint accuracy", i, len(SECTIONS))
        section = steps[name]()
        if section.pop("gone", False):  # the server stopped answering: this section and the rest are not run
            for rest in SECTIONS[i:]:
                result.sections[rest] = {"status": "not run", "reason": section["reason"]}
            break
        result.sections[name] = section
        result.save(out / rundir.ENDPOINT_ACCURACY)
    progress("endpoint accuracy", len(SECTIONS), len(SECTIONS))
    result.settings["skipped_before_gold"] = gold.skipped
    result.verdict = judge_endpoint(result.sections, gold.skipped)
    served_dtype = floor.dtype if floor else opts.reference.dtype  # the floor runs at the served dtype
    result.diagnosis = diagnose(result.sections, result.verdict, clean_kl_bound(result.sections),
                                peaks=activation_peaks(gold), dtype=served_dtype)
    result.save(out / rundir.ENDPOINT_ACCURACY)
    return result


def served_max_model_len(listed: list[dict[str, Any]] | None, model: str) -> int | None:
    """The context the server accepts, from its /v1/models card (vLLM's `max_model_len`)."""
    for card in listed or []:
        if card.get("id") == model and isinstance(card.get("max_model_len"), int):
            return card["max_model_len"]
    return None


def _tokenization(client: EndpointClient, gold: Gold, tokenizer, progress=None) -> EndpointSection:
    replies = send_all(client, [tokenize_request(*_prompt_of(ref, tokenizer)) for ref in gold.prompts],
                       progress=progress)
    if gone := first_gone(replies):
        return _gone(gone)
    mismatches = []
    for ref, reply in zip(gold.prompts, replies):
        if not reply.ok:
            return _unsupported(reason("es_cannot_check", detail=reply.detail))
        tokens = reply.body["tokens"]
        if tokens != ref.input_ids:
            mismatches.append({"id": ref.prompt.id, "ours": tokenizer.decode(ref.input_ids),
                               "server": tokenizer.decode(tokens), "ours_tokens": len(ref.input_ids),
                               "server_tokens": len(tokens)})
    return {"status": "done", "checked": len(replies), "mismatches": mismatches}


def _prompt_of(ref, tokenizer) -> tuple[str | None, list[dict[str, str]] | None]:
    """(text, messages) to send for a prompt as the gold rendered it (prompts.render): a chat prompt's
    messages, or, for a plain text prompt or a base model without a chat template, the text."""
    if ref.prompt.text is None and tokenizer.chat_template:
        return None, ref.prompt.as_messages()
    return plain_text(ref.prompt), None


def _gone(reply: Reply) -> EndpointSection:
    return {"status": "not run", "reason": reply.detail, "gone": True}


def _unsupported(why: Any) -> EndpointSection:
    return {"status": "unsupported", "reason": why}


def _skip(ref, why: Any) -> SkippedPrompt:
    return {"id": ref.prompt.id, "reason": why}


def _none_fits(skipped: list[SkippedPrompt]) -> EndpointSection:
    return _unsupported(reason("es_none_fits", reasons=[s["reason"] for s in skipped]))


def _fits(ref, tokens: int, served_len: int | None) -> Any:
    if served_len is not None and tokens > served_len:
        return reason("es_too_long", tokens=tokens, served_len=served_len)
    return None


def _teacher_forced(client, gold: Gold, fl: FloorData | None, k: int, served_len: int | None,
                    progress=None, in_flight: int = IN_FLIGHT, block: int | None = None,
                    budget: int | None = None) -> EndpointSection:
    """Every suite prompt's teacher-forced log-probs against the gold's (and the floor's), `in_flight` at once; then
    the shape probes (accuracy/shapes.py), one at a time: a few prompts again (prefix-cache hits) and cuts of the
    suite's prompts one below, on and one above block multiples. Each request is one row of the per-prompt judge,
    tagged with its shape; the suite's summary figures are the first pass's alone."""
    rows, floor_rows, variant_rows, skipped, nonfinite = [], [], [], [], 0
    per_prompt: list[list[tuple[float, float, float]]] = []  # (server, floor, variant) KL of each position the floor has
    by_prompt: list[PromptKL] = []  # each request's KL sums, for the per-prompt check
    fitting = [ref for ref in gold.prompts if not _fits(ref, len(ref.sequence) + 1, served_len)]
    replies = send_all(client, [prompt_logprobs_request(ref.sequence, k) for ref in fitting], in_flight,
                       progress=progress)
    if gone := first_gone(replies):
        return _gone(gone)
    answers = dict(zip(map(id, fitting), replies))
    batch = shapes.BATCHED if in_flight > 1 and len(fitting) > 1 else shapes.ALONE
    for n, ref in enumerate(gold.prompts):
        why = _fits(ref, len(ref.sequence) + 1, served_len)
        if why:
            skipped.append(_skip(ref, why))
            continue
        reply = answers[id(ref)]
        if reply.kind == TOO_LONG:
            skipped.append(_skip(ref, reply.detail))
            continue
        if reply.kind == NONFINITE:
            nonfinite += len(ref.sequence) - 1  # every position of this prompt is unusable
            continue
        server = prompt_logprobs_of(reply.body) if reply.ok else None
        if server is None:
            return _unsupported(reply.detail or reason("es_ignored_prompt_logprobs"))
        seen = _positions(ref, n, server, fl, k, len(ref.sequence))
        rows += seen.rows
        floor_rows += seen.floor_rows
        variant_rows += seen.variant_rows
        nonfinite += seen.nonfinite
        per_prompt.append(seen.pairs)
        if seen.served:
            by_prompt.append(prompt_kl(ref.prompt.id, len(ref.sequence), seen.served, seen.pairs)
                             | {"shape": shapes.shape_of(len(ref.sequence), block, budget, batch, shapes.AS_SERVED)})
    if not rows and not nonfinite:
        return _none_fits(skipped)
    probed, probe_skipped = _shape_probes(client, gold, fl, k, [r for r in fitting if id(r) in answers], block,
                                          budget)
    by_prompt += probed
    return {"status": "done", "server": em.summarize(rows), "floor": em.summarize(floor_rows) if floor_rows else None,
            "by_position": em.position_profile(rows),
            "spread": _spread(per_prompt, floor_rows, variant_rows) if floor_rows else None,
            "by_prompt": by_prompt, "nonfinite_positions": nonfinite, "skipped": skipped,
            "shapes": {"block_size": block, "chunk_budget": budget,
                       "ran": shapes.coverage([r["shape"] for r in by_prompt if "shape" in r]),
                       "longest": max((len(r.sequence) for r in fitting), default=0), "not_sent": probe_skipped},
            "kl_note": "KL on the top-k support (coarse-grained): a lower bound on full-vocabulary KL"}


@dataclass
class Seen:
    """One request's positions against the gold (and the floor and its variant where measured)."""
    rows: list[dict] = field(default_factory=list)
    floor_rows: list[dict] = field(default_factory=list)
    variant_rows: list[dict] = field(default_factory=list)
    served: list[float] = field(default_factory=list)  # the server's KL at each position compared
    pairs: list[tuple[float, float, float]] = field(default_factory=list)  # (server, floor, variant) KL
    nonfinite: int = 0


def _positions(ref, n: int, server: list[dict[int, dict]], fl: FloorData | None, k: int, length: int) -> Seen:
    """Positions 1 .. length - 1 of gold prompt `n` (`ref`) as the server scored them: a request of the prompt's
    first `length` tokens has the gold's first logits (a causal model's), so a cut needs no gold of its own."""
    ref_lp = m.log_softmax64(ref.logits)
    seen = Seen()
    for p in range(1, min(length, len(server))):
        known = {t: v["logprob"] for t, v in server[p].items()}
        if not all(math.isfinite(v) for v in known.values()):
            seen.nonfinite += 1
            continue
        top1 = min(server[p], key=lambda t: server[p][t].get("rank", 10**9))
        row = em.position_stats(ref_lp[p - 1], ref.sequence[p], known, top1, k) | {"position": p}
        seen.rows.append(row)
        seen.served.append(row["kl_lb"])
        if fl is not None and fl.logprobs[n] is not None:
            frow = _floor_view(ref_lp[p - 1], fl.logprobs[n][p - 1], ref.sequence[p], k)
            vrow = _floor_view(ref_lp[p - 1], fl.variant_logprobs[n][p - 1], ref.sequence[p], k)
            seen.floor_rows.append(frow)
            seen.variant_rows.append(vrow)
            seen.pairs.append((row["kl_lb"], frow["kl_lb"], vrow["kl_lb"]))
    return seen


def _shape_probes(client, gold: Gold, fl: FloorData | None, k: int, fitting: list, block: int | None,
                  budget: int | None) -> tuple[list[PromptKL], list[str]]:
    """The requests sent on purpose after the suite, one at a time: REPEATS prompts again (each a prefix-cache hit
    where the cache is on) and cuts at block multiples (shapes.length_probes), each with a cache salt of its own
    so that no earlier request's blocks serve it. Their rows, and the probes not sent or not answered, with why."""
    index = {id(ref): n for n, ref in enumerate(gold.prompts)}
    plans = [(ref, len(ref.sequence), shapes.REPEAT, None) for ref in fitting[:shapes.REPEATS]]
    cuts = shapes.length_probes([len(ref.sequence) for ref in fitting], block)
    plans += [(fitting[i], length, shapes.COLD, f"llm-adapt-shape-{length}") for i, length in cuts]
    requests = [prompt_logprobs_request(ref.sequence[:length], k, salt) for ref, length, _, salt in plans]
    out, not_sent = [], []
    for (ref, length, cache, _), reply in zip(plans, send_all(client, requests, 1)):
        server = prompt_logprobs_of(reply.body) if reply.ok else None
        if server is None:
            not_sent.append(f"{ref.prompt.id}@{length}: {reply.detail or reply.kind}")
            continue
        seen = _positions(ref, index[id(ref)], server, fl, k, length)
        if seen.served:
            name = f"{ref.prompt.id} again" if cache == shapes.REPEAT else f"{ref.prompt.id}[:{length}]"
            out.append(prompt_kl(name, length, seen.served, seen.pairs)
                       | {"shape": shapes.shape_of(length, block, budget, shapes.ALONE, cache)})
    return out, not_sent


def _floor_view(ref_lp: torch.Tensor, lp: torch.Tensor, actual: int, k: int) -> dict:
    view, top1 = em.as_server_view(lp, actual, k)
    return em.position_stats(ref_lp, actual, view, top1, k)


def prompt_kl(prompt_id: str, tokens: int, served: list[float], pairs: list[tuple[float, float, float]]) -> PromptKL:
    """One request's KL sums over the positions it was compared at: the server's, and where the floor has the
    prompt, the floor's and its kernel variant's (`pairs`: server, floor, variant at each position)."""
    floor, variant = (float(sum(v[i] for v in pairs)) if pairs else None for i in (1, 2))
    return {"id": prompt_id, "tokens": tokens, "first": 1, "last": len(served), "positions": len(served),
            "server": float(sum(served)), "floor": floor, "variant": variant}


def _spread(per_prompt: list[list[tuple[float, float, float]]], floor_rows: list[dict],
            variant_rows: list[dict]) -> ViewSpread:
    """The relative spread a clean server's KL ratio to the floor shows by chance, from the floor alone: its rerun
    on another kernel path (the variant) against it, runs of positions within each prompt resampled
    (metrics.position_blocks: one long prompt does not make the allowance), and the variant's offset from it.
    The server's own spread is kept beside it for the record and never widens the allowance: a fault on a few
    prompts makes them unlike the others, and would otherwise buy its own allowance."""
    clean = [[(v, f) for _, f, v in p] for p in per_prompt]
    served = [[(t, f) for t, f, _ in p] for p in per_prompt]
    c_t, c_f = m.position_blocks(clean)
    boot_rel = _relative_sd(c_t, c_f)
    s_t, s_f = m.position_blocks(served)
    f_kl = float(np.mean([r["kl_lb"] for r in floor_rows]))
    v_kl = float(np.mean([r["kl_lb"] for r in variant_rows]))
    kernel = abs(v_kl / f_kl - 1) if f_kl > 1e-12 else 0.0
    spread = m.combined_spread(boot_rel, kernel)
    return {"bootstrap": boot_rel, "bootstrap_units": len(c_t), "bootstrap_served": _relative_sd(s_t, s_f),
            "kernel": kernel, "variant_kl_lb_mean": v_kl, "relative": spread, "k": K_SPREAD,
            "source": "floor"}


def _relative_sd(t: np.ndarray, f: np.ndarray) -> float:
    """The bootstrap sd of sum(t) / sum(f) over resampled units, relative to that ratio (NaN where unknown)."""
    ratio = m.ratio_or_none(float(t.sum()), float(f.sum()), tiny=0.0)  # KL sums: a flat model's are ~1e-9 a prompt
    boot = m.bootstrap_ratio_sd(t, f)
    return boot / ratio if ratio and math.isfinite(ratio) and math.isfinite(boot) else float("nan")


def _perplexity(client, gold: Gold, fl: FloorData | None, served_len: int | None, progress=None,
                in_flight: int = IN_FLIGHT) -> EndpointSection:
    server_nll, ref_nll, floor_nll, skipped = [], [], [], 0
    fits = [served_len is None or len(window) + 1 <= served_len for window in gold.corpus]
    replies = send_all(client, [prompt_logprobs_request(w, 1) for w, ok in zip(gold.corpus, fits) if ok], in_flight,
                       progress=progress)
    if gone := first_gone(replies):
        return _gone(gone)
    answers = iter(replies)
    for i, window in enumerate(gold.corpus):
        reply = next(answers) if fits[i] else None
        if reply is None or reply.kind == TOO_LONG:
            skipped += 1
            continue
        plp = prompt_logprobs_of(reply.body) if reply.ok else None
        if plp is None:  # log-probs the server could not serialise, a refusal, or none given
            return _unsupported(reply.detail or reason("es_ignored_prompt_logprobs"))
        server_nll.append(np.array([-plp[p][window[p]]["logprob"] for p in range(1, len(window))]))
        ref_nll.append(gold.corpus_nll[i])
        if fl is not None:
            floor_nll.append(fl.corpus_nll[i])
    if not server_nll:
        return _unsupported(reason("es_no_window", served_len=served_len))
    ref, srv = np.concatenate(ref_nll), np.concatenate(server_nll)
    out = {"status": "done", "ref": float(np.exp(ref.mean())), "server": float(np.exp(srv.mean())),
           "ln_ratio": m.ln_ppl_ratio(ref, srv), "ln_ratio_sem": m.ln_ppl_ratio_sem(ref, srv),
           "tokens": int(len(ref)), "skipped_windows": skipped}
    if floor_nll:
        fln = np.concatenate(floor_nll)
        out.update(floor_ln_ratio=m.ln_ppl_ratio(ref, fln), floor_ln_ratio_sem=m.ln_ppl_ratio_sem(ref, fln))
    return out


def _greedy(client, gold: Gold, tokenizer, opts: CompareOptions, fl: FloorData | None,
            served_len: int | None, progress=None) -> EndpointSection:
    rows, skipped, decode, floor_decode = [], [], [], []
    floor_rows = []
    fitting = [ref for ref in gold.prompts if not _fits(ref, len(ref.input_ids) + opts.max_new_tokens, served_len)]
    replies = send_all(client, [greedy_request(*_prompt_of(ref, tokenizer), opts.max_new_tokens, opts.top_k)
                                for ref in fitting], opts.in_flight, progress=progress)
    if gone := first_gone(replies):
        return _gone(gone)
    answers = dict(zip(map(id, fitting), replies))
    for n, ref in enumerate(gold.prompts):
        why = _fits(ref, len(ref.input_ids) + opts.max_new_tokens, served_len)
        if why:
            skipped.append(_skip(ref, why))
            continue
        reply = answers[id(ref)]
        if reply.kind == TOO_LONG:
            skipped.append(_skip(ref, reply.detail))
            continue
        if not reply.ok:
            return _unsupported(reply.detail)
        answer = greedy_answer(reply.body)
        if answer is None:
            return _unsupported(reason("es_no_tokens"))
        generated, tops, stop_reason = answer
        row = _greedy_row(ref, generated, tops, tokenizer, opts, gold.eos_ids, stop_reason)
        rows.append(row)
        decode += _decode_positions(ref, generated, tops, row, opts.top_k)
        if fl is not None and fl.greedy[n] is not None:
            floor_rows.append(fl.greedy[n])
            floor_decode += _decode_positions(ref, generated, tops, row, opts.top_k, fl.logprobs[n])
    if not rows:
        return _none_fits(skipped)
    return {"status": "done", "rows": rows, "by_category": by_category(rows), "skipped": skipped,
            "floor_genuine": genuine_count(floor_rows) if fl is not None else None,
            "decode": {"server": em.summarize(decode), "floor": em.summarize(floor_decode) if floor_decode else None,
                       "note": "the server's log-probs for its own greedy tokens at decode positions (after the "
                               "first), on the tokens it shares with the reference, against the gold there"}}


def _decode_positions(ref, generated: list[int], tops: list[dict[int, float]], row: GreedyRow, k: int,
                      floor_lp: torch.Tensor | None = None) -> list[dict]:
    """Decode-side teacher forcing for free: up to and including the first divergence, the server's
    sequence equals the reference's, so the gold log-probs there are already known. Position j >= 1
    was computed by the server's decode path (j = 0 by its prefill)."""
    last = row["matched_tokens"] if row["first_divergence"] is not None else len(generated) - 1
    out = []
    for j in range(1, min(last + 1, len(generated), len(tops), len(ref.generated))):
        pos = len(ref.input_ids) + j - 1
        ref_lp = m.log_softmax64(ref.logits[pos])
        if floor_lp is not None:
            out.append(_floor_view(ref_lp, floor_lp[pos], generated[j], k))
            continue
        known = dict(tops[j])
        if not known or not all(math.isfinite(v) for v in known.values()):
            continue
        top1 = max(known, key=known.get)
        out.append(em.position_stats(ref_lp, generated[j], known, top1, k))
    return out


def greedy_answer(body: dict[str, Any]) -> tuple[list[int], list[dict[int, float]], int | str | None] | None:
    """A greedy answer's token ids, per-token top log-probs and stop reason; None when it has neither ids
    nor log-probs. Pure."""
    choice = body["choices"][0]
    ids = choice.get("token_ids")
    tops = _top_logprobs(choice.get("logprobs"))
    if ids is None:
        if not tops:
            return None
        ids = _chosen_ids(choice.get("logprobs"))
    return list(ids), tops, choice.get("stop_reason")


def _top_logprobs(logprobs: dict | None) -> list[dict[int, float]]:
    """Per generated token: {token id: logprob} of the server's top-k plus its chosen token
    (chat: logprobs.content[]; completions: logprobs.top_logprobs[] and token_logprobs[])."""
    if not logprobs:
        return []
    if logprobs.get("content") is not None:
        out = []
        for c in logprobs["content"]:
            known = {_token_id(t["token"]): t["logprob"] for t in (c.get("top_logprobs") or [])}
            known.setdefault(_token_id(c["token"]), c["logprob"])
            out.append(known)
        return out
    tokens, chosen = logprobs.get("tokens") or [], logprobs.get("token_logprobs") or []
    out = []
    for tok, lp, top in zip(tokens, chosen, logprobs.get("top_logprobs") or []):
        known = {_token_id(t): v for t, v in (top or {}).items()}
        known.setdefault(_token_id(tok), lp)
        out.append(known)
    return out


def _chosen_ids(logprobs: dict | None) -> list[int]:
    if logprobs and logprobs.get("content") is not None:
        return [_token_id(c["token"]) for c in logprobs["content"]]
    return [_token_id(t) for t in (logprobs or {}).get("tokens") or []]


def _token_id(token: str) -> int:
    return int(token.split(":", 1)[1]) if token.startswith("token_id:") else -1


def _greedy_row(ref, generated, tops, tokenizer, opts, eos_ids: list[int], stop_reason) -> GreedyRow:
    if ref.generated and ref.generated[-1] in eos_ids and generated == ref.generated[:-1]:
        generated = list(ref.generated)  # the server left out the final EOS the reference kept
    # vLLM names the stop token in `stop_reason` when it is not the tokenizer's EOS
    server_stops = [stop_reason] if isinstance(stop_reason, int) else eos_ids

    def mutual(k: int, pos: int) -> bool | None:
        server_top = set(tops[k]) if k < len(tops) else set()
        if not server_top:
            return None
        ref_top = set(ref.logits[pos].topk(opts.top_k).indices.tolist())
        return bool(generated[k] in ref_top and ref.generated[k] in server_top)

    return greedy_row(ref, generated, tokenizer, opts.tie_margin, mutual, eos_ids, server_stops)
