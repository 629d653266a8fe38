"""The serve stage's engine launched ahead, during the in-process accuracy (run/pipeline.launch_next_ahead): only
where both stages run and the host's free memory holds both; the serve stage then waits on that engine."""

from llm_adapt.run.stages import overlap_fits

GIB = 1024**3


def test_a_cpu_engine_is_launched_ahead_only_where_both_fit_in_free_memory():
    small = 135_000_000  # the default model's parameters
    assert overlap_fits(5 * GIB, small, 20 * GIB, host_memory=True)  # 5 GiB + 1.6 GiB of float32 copies
    assert not overlap_fits(5 * GIB, 7_000_000_000, 64 * GIB, host_memory=True)  # 84 GiB of copies beside it
    assert not overlap_fits(12 * GIB, small, 20 * GIB, host_memory=True)  # over 60% of what is free
    assert not overlap_fits(1 * GIB, small, 200 * GIB, host_memory=False)  # an accelerator's device is shared


def test_a_server_launched_ahead_is_waited_on_not_started_again(tmp_path):
    """ManagedServer.launch, then the `with` that waits: the same process, its startup counted from the launch and
    the wait only from the `with`; stopped on the way out."""
    import sys
    import time

    from llm_adapt.engines.server import ManagedServer, free_port
    from tests.engines.test_server_lifecycle import CHILDREN, spec

    port = free_port()
    server = ManagedServer(spec([sys.executable, "-c", "import time; time.sleep(1.5)\n" + CHILDREN, str(port)], port),
                           tmp_path / "log")
    server.launch()
    pid = server.proc.pid
    time.sleep(2.5)  # the work the launch overlaps
    with server:
        assert server.proc.pid == pid and server.alive()
        assert server.startup_seconds >= 2.5 and server.waited_seconds < server.startup_seconds - 2.0
    assert not server.alive()
