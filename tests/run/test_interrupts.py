"""A Ctrl-C or SIGTERM whose raise is swallowed (inside a finalizer) still stops the run."""

import os
import signal

import pytest

from llm_adapt import interrupts


@pytest.fixture
def installed():
    restore = interrupts.install()
    yield
    restore()
    interrupts.received = None


def swallowed(signum):
    """The signal arrives while a finalizer runs: CPython reports the exception and carries on."""
    try:
        os.kill(os.getpid(), signum)
    except KeyboardInterrupt:
        pass


@pytest.mark.parametrize("signum,kind", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, interrupts.Terminated)])
def test_a_swallowed_signal_is_raised_again_at_the_next_check(installed, signum, kind):
    interrupts.check()  # nothing received: no raise
    swallowed(signum)
    with pytest.raises(kind):
        interrupts.check()


def test_install_clears_the_record_and_restore_puts_the_handlers_back():
    before = signal.getsignal(signal.SIGINT)
    interrupts.received = signal.SIGINT
    restore = interrupts.install()
    assert interrupts.received is None and signal.getsignal(signal.SIGINT) is interrupts.on_signal
    restore()
    assert signal.getsignal(signal.SIGINT) is before


def test_the_next_stage_is_marked_interrupted_and_the_run_stops(installed, tmp_path):
    from types import SimpleNamespace

    from llm_adapt.run.pipeline import run_stage

    from tests.conftest import table_stage

    status = SimpleNamespace(stages={}, save=lambda path: None)
    cfg = SimpleNamespace(skip=(), tasks=None, layers=False, dummy=False, resume=False, out=tmp_path,
                          log=lambda *a: None)
    ran = []
    swallowed(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        run_stage(cfg, SimpleNamespace(status=status), table_stage("accuracy", run=lambda c, s: ran.append(1)))
    assert ran == [] and status.stages["accuracy"]["status"] == "interrupted"


class _Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)  # the handler raises here, inside a finalizer


def test_an_interrupt_inside_a_finalizer_is_kept_quietly_and_raised_at_the_check(installed, capsys):
    _Finalized()  # collected at once: CPython swallows the KeyboardInterrupt raised in __del__
    assert interrupts.received == signal.SIGINT
    assert "Traceback" not in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()


class _Broken:
    def __del__(self):
        raise ValueError("a real finalizer bug")


def test_other_unraisable_exceptions_are_still_reported(monkeypatch):
    import sys

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_value))
    restore = interrupts.install()
    try:
        _Broken()
    finally:
        restore()
        interrupts.received = None
    assert [type(e) for e in seen] == [ValueError]


def test_a_progress_report_in_the_main_thread_raises_a_swallowed_interrupt(installed):
    import threading

    from rich.console import Console

    from llm_adapt.progress import progress_bar

    with progress_bar(Console(file=open(os.devnull, "w"))) as report:
        report("work", 0, 2)
        swallowed(signal.SIGINT)
        worker = threading.Thread(target=report, args=("work", 1, 2))
        worker.start()
        worker.join()  # another thread's report does not raise in that thread
        with pytest.raises(KeyboardInterrupt):
            report("work", 2, 2)


def test_the_stages_after_a_stop_say_why():
    from llm_adapt.interrupts import Terminated
    from llm_adapt.run.pipeline import interrupt_reason

    assert "SIGTERM" in interrupt_reason(Terminated())
    assert "Ctrl-C" in interrupt_reason(KeyboardInterrupt())
    assert "AdaptError" in interrupt_reason(__import__("llm_adapt.errors", fromlist=["AdaptError"]).AdaptError("x"))


def test_a_signal_after_the_stop_waits_for_the_report():
    import os
    import signal

    from llm_adapt import interrupts

    restore = interrupts.install()
    try:
        interrupts.received = signal.SIGINT  # the stop already taken
        with interrupts.deferred():
            assert interrupts.received is None
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C while the report is drawn: recorded, not raised
        assert interrupts.received == signal.SIGINT
    finally:
        interrupts.received = None
        restore()


def test_the_report_after_a_stop_is_drawn_in_a_fresh_interpreter(tiny_llama, tmp_path, monkeypatch):
    """An interrupt inside an import leaves that module half-initialised in the run's interpreter (seen:
    numpy, then "module 'numpy' has no attribute 'minimum'" in the plots): the report after the stop must
    not depend on it. Here the run's own renderer is broken; the report must still be drawn."""
    import llm_adapt.report.render as render
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.run.config import RunConfig
    from llm_adapt.run.pipeline import _report_after_stop, new_status
    from llm_adapt.run.state import RunState

    source = resolve_model(str(tiny_llama))
    plan = PlanOptions(model_path=str(source.path), served_model_name="tiny")
    run_inspect(source, plan, "cpu").save(tmp_path / "inspect.json")
    cfg = RunConfig(out=tmp_path, model_arg=str(tiny_llama), plan_options_for=lambda s: None, log=lambda m: None)
    state = RunState(status=new_status(cfg))

    def poisoned(*args, **kwargs):
        raise AttributeError("module 'numpy' has no attribute 'minimum'")

    monkeypatch.setattr(render, "render_report", poisoned)
    _report_after_stop(cfg, state, KeyboardInterrupt())
    assert state.status.stages["report"]["status"] == "done", state.status.stages["report"]
    assert (tmp_path / "report.md").exists() and (tmp_path / "report.html").exists()
    assert "Ctrl-C" in state.status.stages["bench"]["reason"]
    # one verdict, on disk before the report was drawn: not judged
    assert state.status.stopped_by == "SIGINT" and state.status.verdict["status"] == "INTERRUPTED"
    assert "**Verdict: interrupted: not judged**" in (tmp_path / "report.md").read_text()


def test_resume_judges_the_run_again(tmp_path):
    """--resume reads the stopped run's status and clears its stop and verdict: the finished run is judged."""
    from llm_adapt.run.config import RunConfig
    from llm_adapt.run.pipeline import _load_or_new_status, new_status, stopping_signal
    from llm_adapt.run_status import interrupted_verdict

    cfg = RunConfig(out=tmp_path, model_arg="default", plan_options_for=lambda s: None, resume=True)
    stopped = new_status(cfg).model_copy(update={"stopped_by": "SIGTERM", "verdict": interrupted_verdict("SIGTERM")})
    stopped.save(tmp_path / "status.json")
    again = _load_or_new_status(cfg)
    assert again.stopped_by is None and again.verdict is None and not again.finished
    assert stopping_signal(interrupts.Terminated()) == "SIGTERM" and stopping_signal(KeyboardInterrupt()) == "SIGINT"
    assert stopping_signal(ValueError()) is None


def test_the_runs_own_interrupted_verdict_is_the_reports_without_importing_it():
    """A signal inside a module's first import can leave it half made (numpy then refuses a second import: a run
    stopped so exited 1 with a traceback when it imported the report for its verdict); the run's verdict needs
    only the signal, and the report gives the same one."""
    from llm_adapt.judged.verdict import overall_verdict
    from llm_adapt.run_status import interrupted_verdict, signal_words
    from tests.records import run_data

    for stopped_by, words in (("SIGINT", "Ctrl-C"), ("SIGTERM", "SIGTERM")):
        status = {"model": "m", "platform": "cpu", "stages": {}, "workload": {}, "stopped_by": stopped_by}
        report = overall_verdict(run_data(status=status))
        own = interrupted_verdict(signal_words(stopped_by))
        assert own["status"] == report["status"] == "INTERRUPTED" and signal_words(stopped_by) == words
        assert [str(r) for r in own["reasons"]] == [str(r) for r in report["reasons"]] and words in str(own["reasons"][0])


@pytest.mark.parametrize("forgotten,code", [(True, 130), (False, -signal.SIGINT)])
def test_an_interrupt_caught_after_it_escaped_an_exec_keeps_its_exit_code(tmp_path, forgotten, code):
    """CPython under `-m` dies by SIGINT at exit once a KeyboardInterrupt escaped an exec() of a string (a Ctrl-C
    during an import that makes a dataclass), even when the interrupt was caught later: the CLI's 130 became -2
    in CI. forget_escaped() keeps the exit code; without it the quirk shows, which is what this test guards."""
    import subprocess
    import sys

    (tmp_path / "stopped.py").write_text(
        "import sys\nfrom llm_adapt import interrupts\n"
        "try:\n    exec('raise KeyboardInterrupt')\nexcept KeyboardInterrupt:\n"
        f"    {'interrupts.forget_escaped()' if forgotten else 'pass'}\n"
        "sys.exit(130)\n")
    done = subprocess.run([sys.executable, "-m", "stopped"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stderr
