"""Greedy decoding compared token by token: the first divergence, classified by the reference's own
margin there (near-tie or genuine), wrong stop positions included. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.result import CategoryStats, GreedyRow

if TYPE_CHECKING:
    import torch

    from llm_adapt.accuracy.reference import RefPrompt


def token_text(tokenizer, token_id: int) -> str:
    """One token as text; a token that is part of a UTF-8 sequence (a piece of a Chinese character,
    say) decodes to U+FFFD alone, so it is shown as its bytes and id instead: two different tokens
    never print the same."""
    text = tokenizer.decode([token_id])
    if "\ufffd" not in text:
        return text
    raw = token_bytes(tokenizer.convert_ids_to_tokens(token_id))
    return f"<{' '.join(f'{b:02x}' for b in raw)}> (id {token_id})" if raw else f"<id {token_id}>"


def token_bytes(piece: str | None) -> bytes | None:
    """The bytes a vocabulary piece stands for: sentencepiece's byte pieces ('<0xE5>') or a byte-level
    BPE piece (GPT-2's byte-to-character alphabet); None for anything else. Pure."""
    import re

    if not piece:
        return None
    if match := re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", piece):
        return bytes([int(match[1], 16)])
    back = _byte_level_alphabet()
    return bytes(back[c] for c in piece) if all(c in back for c in piece) else None


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet, character -> byte: printable bytes stand for themselves, the
    others are shifted past 255 (the mapping every byte-level tokenizer shares)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), ord("\xff") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def greedy_from_teacher_forcing(argmax: list[int], gold: list[int], stops: list[int],
                                max_new_tokens: int) -> tuple[list[int], bool]:
    """A target's greedy tokens read off its teacher-forced pass over the gold's sequence, and whether
    they are complete. Pure.

    `argmax[k]` is the target's top-1 at the position that chose the gold's token k (the last entry
    follows the gold's last token). Up to the first token where the target leaves the gold, every
    position sees the same tokens greedy decoding would feed it, so its top-1 is its greedy token;
    from the first departure on (a different token, or going past the gold's end) the target must be
    decoded itself: (tokens so far, False). A stop token of the target's, or the token budget, ends it."""
    out: list[int] = []
    for k, token in enumerate(argmax[:max_new_tokens]):
        out.append(token)
        if token in stops:
            return out, True
        if k >= len(gold) or token != gold[k]:
            return out, len(out) >= max_new_tokens
    return out, len(out) >= max_new_tokens


def teacher_forced_greedy(ref: RefPrompt, logits, tokenizer, top_k: int, tie_margin: float, max_new_tokens: int,
                          ref_stops: list[int], target_stops: list[int]) -> GreedyRow:
    """A target's greedy row from its teacher-forced `logits` over the gold's sequence: its tokens read
    off the pass (greedy_from_teacher_forcing), compared with the gold's (greedy_row); `target_cut` where
    it left the gold, so its tokens end there."""
    start = len(ref.input_ids) - 1  # the position that chose the first generated token
    tokens, complete = greedy_from_teacher_forcing(logits[start:].argmax(-1).tolist(), ref.generated, target_stops,
                                                   max_new_tokens)

    def mutual(k: int, pos: int) -> bool:
        return m.mutual_topk(ref.logits[pos], logits[pos], ref.generated[k], tokens[k], top_k)

    row = greedy_row(ref, tokens, tokenizer, tie_margin, mutual, ref_stops, target_stops)
    if not complete:  # it left the gold: the comparison ends there, and so do its tokens
        row["target_cut"] = True
    return row


def greedy_row(ref: RefPrompt, generated: list[int], tokenizer, tie_margin: float,
               mutual: Callable[[int, int], bool | None], ref_stops: list[int],
               target_stops: list[int]) -> GreedyRow:
    """One prompt's greedy comparison: first divergence, classified by the reference's own margin there.

    A token differing is classified by the reference's top-1 - top-2 margin; a side that stopped
    where the other went on ("early" / "late" stop) by the reference's margin between stopping and
    going on; a stop where both chose the same token but only one side treats it as a stop is a
    genuine stop divergence (the EOS lists differ). `mutual(k, pos)`: each side's token at
    divergence k is in the other's top-k."""
    k = m.first_divergence(ref.generated, generated)
    row: GreedyRow = {
        "id": ref.prompt.id, "category": ref.prompt.category, "ref_tokens": len(ref.generated),
        "target_tokens": len(generated), "matched_tokens": len(ref.generated) if k is None else k,
        "exact": k is None, "first_divergence": k, "divergence": None, "stop": None, "ref_margin": None,
        "mutual_topk": None, "ref_text": tokenizer.decode(ref.generated, skip_special_tokens=True),
        "target_text": tokenizer.decode(generated, skip_special_tokens=True),
    }
    if k is None:
        return row
    pos = len(ref.input_ids) + k - 1  # the position whose logits chose token k
    if k < len(ref.generated) and k < len(generated):
        ref_tok, tgt_tok = ref.generated[k], generated[k]
        row.update(ref_token=token_text(tokenizer, ref_tok), target_token=token_text(tokenizer, tgt_tok),
                   ref_token_id=ref_tok, target_token_id=tgt_tok)
        if ref_tok in ref_stops or tgt_tok in target_stops:
            ref_stopped = ref_tok in ref_stops
            margin = stop_margin(ref.logits[pos], ref_tok, [ref_tok] if ref_stopped else [tgt_tok], ref_stopped)
            return _classified(row, margin, tie_margin, stop="late" if ref_stopped else "early")
        margin = m.top2_margin(ref.logits[pos])
        row["mutual_topk"] = mutual(k, pos)
        return _classified(row, margin, tie_margin)
    return _stop_row(row, ref, generated, k, pos, tie_margin, ref_stops, target_stops)


def _stop_row(row: GreedyRow, ref: RefPrompt, generated: list[int], k: int, pos: int, tie_margin: float,
              ref_stops: list[int], target_stops: list[int]) -> GreedyRow:
    """One side's tokens are a prefix of the other's: it stopped at k, the other went on."""
    if len(generated) < len(ref.generated):  # the target ended first
        last = generated[-1] if generated else None
        if (last in target_stops and last not in ref_stops) or ref.generated[k] in target_stops:
            row.update(divergence="genuine", stop="early", stop_note="both chose the same token; only the target stops on it")
            return row
        margin = stop_margin(ref.logits[pos], ref.generated[k], target_stops, ref_stopped=False)
        return _classified(row, margin, tie_margin, stop="early")
    # the reference ended first: it stopped on a token the target also chose but went past
    row.update(divergence="genuine", stop="late", stop_note=(
        "both chose the same token; only the reference stops on it" if ref.generated and ref.generated[-1] in ref_stops
        else "the target went past the reference's last token"))
    return row


def _classified(row: GreedyRow, margin: float, tie_margin: float, stop: str | None = None) -> GreedyRow:
    row.update(divergence=m.classify_divergence(margin, tie_margin), ref_margin=round(margin, 5), stop=stop)
    return row


def by_category(greedy: list[GreedyRow]) -> dict[str, CategoryStats]:
    out: dict[str, CategoryStats] = {}
    for row in greedy:
        cat = out.setdefault(row["category"], {"prompts": 0, "exact": 0, "matched_tokens": 0, "ref_tokens": 0,
                                                "near_tie": 0, "genuine": 0, "early_stop": 0, "late_stop": 0})
        cat["prompts"] += 1
        cat["exact"] += int(row["exact"])
        cat["matched_tokens"] += row["matched_tokens"]
        cat["ref_tokens"] += row["ref_tokens"]
        if row["divergence"]:
            cat[row["divergence"].replace("-", "_")] += 1
        if row.get("stop"):
            cat[f"{row['stop']}_stop"] += 1
    for cat in out.values():
        cat["exact_rate"] = cat["exact"] / cat["prompts"]
        cat["token_match_rate"] = cat["matched_tokens"] / cat["ref_tokens"] if cat["ref_tokens"] else 1.0
    return out


def stop_margin(ref_logits: torch.Tensor, continued: int, stop_ids: list[int], ref_stopped: bool) -> float:
    """The reference's margin at a position where one side stopped and the other went on (nats).

    ref_stopped: the reference chose a stop token there -> log p(best stop) - log p(best other);
    else the reference went on with `continued` -> log p(continued) - log p(best stop).
    Non-negative when the reference's own choice is compared with the other option."""
    import torch

    lp = m.log_softmax64(ref_logits)
    stops = torch.tensor(sorted(set(stop_ids)), dtype=torch.long)
    best_stop = float(lp[stops].max()) if len(stops) else float("-inf")
    if ref_stopped:
        others = lp.clone()
        others[stops] = float("-inf")
        return best_stop - float(others.max())
    return float(lp[continued]) - best_stop
