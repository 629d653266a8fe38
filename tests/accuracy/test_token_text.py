"""Tokens that are pieces of one UTF-8 character print as their bytes and ids, never as the same '�'."""

from llm_adapt.accuracy.greedy import token_bytes, token_text


def test_byte_pieces_of_both_vocabulary_kinds_read_as_their_bytes():
    assert token_bytes("<0xE5>") == b"\xe5"  # sentencepiece's byte fallback
    assert token_bytes("Ġthe") == b" the"  # byte-level BPE: Ġ is the space byte
    assert token_bytes("åĮ") == "北".encode()[:2]
    assert token_bytes(None) is None
    assert token_bytes("▁北") is None  # a sentencepiece word piece is no byte sequence


class _Tok:
    pieces = {1: "åĮ", 2: "Ĺ", 3: "hi"}

    def decode(self, ids):
        raw = b"".join(token_bytes(self.pieces[i]) for i in ids)
        return raw.decode("utf-8", errors="replace")

    def convert_ids_to_tokens(self, token_id):
        return self.pieces[token_id]


def test_two_partial_tokens_never_print_the_same():
    tok = _Tok()
    assert tok.decode([1]) == tok.decode([2]) == "\ufffd"  # what the report printed for both
    assert token_text(tok, 1) == "<e5 8c> (id 1)" and token_text(tok, 2) == "<97> (id 2)"
    assert token_text(tok, 3) == "hi"


def test_the_default_models_chinese_pieces(default_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(default_model.path)
    ids = tok("北京")["input_ids"]
    shown = [token_text(tok, i) for i in ids]
    assert "\ufffd" not in "".join(shown) and len(set(shown)) == len(shown)
    raw = b"".join(bytes(int(h, 16) for h in s[1:s.index(">")].split()) if s.startswith("<") else s.encode()
                   for s in shown)
    assert raw.decode() == "北京"
