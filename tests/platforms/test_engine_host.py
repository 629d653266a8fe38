"""A command that would start a platform's engine on a host without that platform is refused first: one line
naming what the host lacks and the two ways on (--endpoint, inspect), exit 2, nothing written. The host is faked
both ways: a stand-in npu-smi on PATH (tests/fake_npu_smi.py) and a stand-in torch_npu package on sys.path."""

import importlib.util
import os

import pytest

from llm_adapt.cli import main
from llm_adapt.errors import UsageError
from llm_adapt.platforms import cuda, npu, require_engine_host
from tests.fake_npu_smi import write_fake_npu_smi


@pytest.fixture
def bare_host(tmp_path, monkeypatch):
    """No npu-smi on PATH (an empty PATH but for python's own directory) and no torch_npu importable."""
    if importlib.util.find_spec("torch_npu") is not None:
        pytest.skip("torch_npu is installed here: the bare host cannot be faked")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return tmp_path


@pytest.fixture
def ascend_host(tmp_path, monkeypatch):
    """npu-smi on PATH (prints Huawei's recorded samples) and a torch_npu package that can be found."""
    bin_dir = tmp_path / "bin"
    write_fake_npu_smi(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    package = tmp_path / "site" / "torch_npu"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    return tmp_path


def test_a_bare_host_lacks_both_and_the_line_says_so(bare_host):
    assert npu.npu_missing() == ["no npu-smi on PATH (the Ascend driver)", "no torch_npu package"]
    with pytest.raises(UsageError) as refused:
        require_engine_host("npu", "./m")
    line = str(refused.value)
    assert "\n" not in line and "npu-smi" in line and "torch_npu" in line
    assert "--endpoint URL" in line and "`llm-adapt inspect ./m --platform npu`" in line


def test_an_ascend_host_passes(ascend_host):
    assert npu.npu_missing() == []
    require_engine_host("npu", "./m")


def test_one_missing_piece_is_named_alone(ascend_host, monkeypatch):
    monkeypatch.setenv("PATH", str(ascend_host / "site"))  # torch_npu there, npu-smi not
    assert npu.npu_missing() == ["no npu-smi on PATH (the Ascend driver)"]


def test_a_host_without_an_nvidia_driver_lacks_cuda(monkeypatch):
    monkeypatch.setattr(cuda, "nvidia_driver_present", lambda: False)
    assert cuda.cuda_missing() == ["no NVIDIA driver loaded (no /proc/driver/nvidia/version)"]
    with pytest.raises(UsageError, match="--platform cuda starts vLLM on this host, which has no NVIDIA driver"):
        require_engine_host("cuda", "default")


def test_the_host_itself_and_a_detected_platform_are_never_refused():
    require_engine_host(None, "default")
    require_engine_host("cpu", "default")


@pytest.mark.parametrize("argv", [["serve", "default", "--platform", "npu"],
                                  ["probe", "default", "--platform", "npu"],
                                  ["run", "default", "--platform", "npu", "--out", "OUT"]])
def test_commands_that_start_an_engine_refuse_before_anything(argv, bare_host, monkeypatch, capsys):
    monkeypatch.chdir(bare_host)
    argv = [str(bare_host / "out") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no npu-smi" in err[0] and "--endpoint URL" in err[0]
    assert sorted(p.name for p in bare_host.iterdir()) == ["empty-bin"]  # no runs/, no --out


def test_an_endpoint_or_a_skipped_engine_needs_no_npu_here(bare_host, monkeypatch, capsys):
    """With --endpoint the engine runs elsewhere; the check is not in the way (the unreachable URL is)."""
    monkeypatch.chdir(bare_host)
    assert main(["run", "default", "--platform", "npu", "--endpoint", "http://127.0.0.1:9/v1"]) == 2
    assert "connection refused" in capsys.readouterr().err


def test_the_faked_ascend_host_gets_past_the_check(ascend_host, capsys):
    """The same command on the stand-in Ascend host fails on its next check (the missing model), not the platform."""
    assert main(["serve", str(ascend_host / "missing"), "--platform", "npu"]) == 2
    err = capsys.readouterr().err
    assert "no such file or directory" in err and "npu-smi" not in err
