"""The planted faults' builders link the source's weights instead of copying them: neither a fault in the
config nor one in the weights may change the source model they were built from."""

import hashlib
import json

from llm_adapt.models.synthetic import write_tiny_llama

from . import faults as f


def digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_faults_leave_their_source_as_it_was(tmp_path):
    source = write_tiny_llama(tmp_path / "src", num_hidden_layers=f.FAULT_LAYER + 1)
    before = digest(source)
    config_only = f.wrong_rms_norm_eps(source, tmp_path / "eps")
    in_weights = f.perturbed_layer(source, tmp_path / "perturbed")
    assert digest(source) == before
    # the config fault shares the weights' file; the weight fault has one of its own, and it differs
    assert (config_only / "model.safetensors").stat().st_ino == (source / "model.safetensors").stat().st_ino
    assert json.loads((config_only / "config.json").read_text())["rms_norm_eps"] == 1e-2
    assert (in_weights / "model.safetensors").stat().st_ino != (source / "model.safetensors").stat().st_ino
    assert digest(in_weights)["model.safetensors"] != before["model.safetensors"]
