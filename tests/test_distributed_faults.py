"""A rank that freezes (SIGSTOP) or dies (SIGKILL): the survivors raise DistributedError naming
the dead peer and the iteration of its last message, on receive and on send, for tau = 0 and
tau >= 1, and their processes exit at once (gloo's own timeout is 600 s here)."""

import multiprocessing
import os
import queue
import signal
import time

import pytest

torch = pytest.importorskip("torch")

from _dist_workers import sgp_until_error  # noqa: E402

from sgpverify.distributed.transport import free_port  # noqa: E402

TIMEOUT = 2.0


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="forks the ranks")
@pytest.mark.parametrize("tau", [0, 1])
@pytest.mark.parametrize("how", ["SIGSTOP", "SIGKILL"])
def test_survivors_name_the_dead_peer_and_exit_at_once(tau, how):
    world, victim = 3, 2
    ctx = multiprocessing.get_context("fork")
    # a queue per rank: a multiprocessing.Queue's write lock is shared by the processes that put on
    # it, and a victim stopped while its feeder thread still held that lock (after its "started"
    # message, waiting for the GIL to release it) would keep the survivors' errors from ever arriving
    qs = [ctx.Queue() for _ in range(world)]
    port = free_port()
    ps = [ctx.Process(target=sgp_until_error, args=(r, world, port, tau, TIMEOUT, qs[r])) for r in range(world)]
    for p in ps:
        p.start()
    try:
        assert [q.get(timeout=180)[1] for q in qs] == list(range(world))  # a loaded machine
        t0 = time.time()
        os.kill(ps[victim].pid, getattr(signal, how))
        errors = []
        for r, q in enumerate(qs):
            if r == victim:
                continue
            try:
                errors.append(q.get(timeout=TIMEOUT + 30))
            except queue.Empty:  # say what the silent survivor did: still running, or dead and how
                ps[r].join(timeout=1)
                code = ps[r].exitcode
                pytest.fail(f"rank {r} reported no error within {TIMEOUT + 30} s (exit code {code}); {errors}")
        errors.sort(key=lambda e: e[2])
        # a survivor names the victim; another may name that survivor, which stopped sending when it
        # raised or while it waited (from where it stands, the peer that went silent)
        assert any(f"from rank {victim} " in e[3] or f"to rank {victim} " in e[3] for e in errors), errors
        for kind, rank, t, msg in errors:
            assert kind == "error" and msg.startswith("DistributedError"), msg
            assert rank != victim and "its last message folded here: iteration " in msg, msg
            assert t - t0 <= 2 * TIMEOUT + 3
        for p in ps[:victim]:
            p.join(timeout=TIMEOUT + 5)
            assert p.exitcode == 1  # exited, a few seconds after the error at most
        assert time.time() - t0 <= 2 * TIMEOUT + 8
    finally:
        for p in ps:
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join()


def test_a_failed_distributed_run_is_one_line_and_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    import tempfile

    from sgpverify.cli import main

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.setenv("SGPVERIFY_VERBOSE", "0")  # restored after the test, which sets it with --verbose
    rc = main(["distributed", "--nproc", "3", "--iters", "20", "--timeout", "0.001"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "rank " in err, err
    assert list(tmp_path.iterdir()) == []  # no temporary directory, no torch error file
    # the control: the same failure with --verbose lets the ranks' own log lines through
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert main(["distributed", "--nproc", "3", "--iters", "20", "--timeout", "0.001", "--verbose"]) == 2
    assert list(tmp_path.iterdir()) == []
