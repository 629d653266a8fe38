"""Hub ids against a local cache in Hugging Face's own layout (no network here)."""

import json
import shutil

import pytest

from llm_adapt.cli import main
from llm_adapt.errors import AdaptError, UsageError
from llm_adapt.models.hub import parse_hub_id
from llm_adapt.models.source import resolve_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def hf_cache(tmp_path, monkeypatch, tiny_llama):
    """models--org--tiny with refs/main -> COMMIT and a snapshot holding config + tokenizer (no weights)."""
    cache = tmp_path / "hub"
    snap = cache / "models--org--tiny" / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text(COMMIT)
    for f in tiny_llama.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy2(f, snap / f.name)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return snap


def test_parse_ids():
    assert parse_hub_id("hf:meta-llama/Llama-3.2-1B@main").repo == "meta-llama/Llama-3.2-1B"
    assert parse_hub_id("ms:LLM-Research/Llama-3.2-3B-Instruct").revision is None
    with pytest.raises(UsageError, match="expected hf:ORG/NAME"):
        parse_hub_id("hf:no-slash")


def test_cached_config_resolves_offline(hf_cache):
    source = resolve_model("hf:org/tiny", weights=False, offline=True)
    assert source.path == hf_cache and source.name == "tiny" and not source.has_weights


def test_weights_not_present_yet(hf_cache):
    with pytest.raises(AdaptError, match="weights are not in the local cache"):
        resolve_model("hf:org/tiny", weights=True, offline=True)


def test_weights_present_after_download(hf_cache, tiny_llama):
    shutil.copy2(tiny_llama / "model.safetensors", hf_cache / "model.safetensors")
    assert resolve_model("hf:org/tiny", offline=True).has_weights


def test_hub_offline_variable_is_honoured(hf_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_model("hf:org/tiny", weights=False).path == hf_cache


def test_unknown_id_offline_is_one_clear_line(hf_cache):
    with pytest.raises(UsageError, match="not in the local cache and offline mode is on"):  # exit 2
        resolve_model("hf:org/absent", weights=False, offline=True)


def test_no_network_and_not_cached(hf_cache, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: as good as no network
    with pytest.raises(AdaptError, match="cannot be reached|not in the local cache"):
        resolve_model("hf:org/absent", weights=False)


def test_modelscope_needs_its_library():
    pytest.importorskip("llm_adapt")
    try:
        import modelscope  # noqa: F401
        pytest.skip("modelscope is installed here")
    except ImportError:
        pass
    with pytest.raises(UsageError, match="pip install"):
        resolve_model("ms:LLM-Research/tiny", weights=False)


def test_inspect_a_hub_id_from_the_cache(capsys, hf_cache):
    assert main(["inspect", "hf:org/tiny", "--offline", "--platform", "cuda", "--device-memory", "24", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"]["origin"] == "hf" and data["parameters"]["from_weights"] is None


def test_compare_on_config_only_model_says_what_is_missing(capsys, hf_cache):
    assert main(["compare", "hf:org/tiny", "--offline"]) == 2  # offline, a miss is the user's to fix
    assert "weights are not in the local cache" in capsys.readouterr().err
