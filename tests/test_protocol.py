"""The child's event protocol (pure logic, no processes)."""
import pytest

from autograder.isolation.protocol import Protocol, Tampered


def _ready():
    p = Protocol()
    p.receive({"event": "jax", "version": "0.10.2"})
    p.receive({"event": "ready"})
    return p


def test_a_run_goes_start_traced_done():
    p = _ready()
    assert p.state == "idle" and p.jax_version == "0.10.2"
    p.sent("r3")
    assert p.phase == "tracing"
    assert p.receive({"event": "start", "run": "r3"}) == "start"
    assert p.receive({"event": "traced", "run": "r3"}) == "traced" and p.phase == "running"
    assert p.receive({"event": "done", "run": "r3"}) == "done"
    assert p.state == "idle" and p.current is None


def test_an_error_while_tracing_may_end_the_run_without_traced():
    p = _ready()
    p.sent("r0")
    p.receive({"event": "start", "run": "r0"})
    p.receive({"event": "done", "run": "r0"})
    assert p.state == "idle"


def test_a_load_error_ends_startup():
    p = Protocol()
    p.receive({"event": "jax", "version": "x"})
    p.receive({"event": "load", "status": "error"})
    assert p.state == "failed"


@pytest.mark.parametrize("events", [
    [{"event": "done", "run": "r0"}],                                   # done before anything
    [{"event": "start", "run": "r1"}],                                  # not the run sent
    [{"event": "start", "run": "r0"}, {"event": "start", "run": "r0"}],  # twice
    [{"event": "start", "run": "r0"}, {"event": "done", "run": "r9"}],  # another run's done
    [{"event": "ready"}],                                               # startup again
    [{"event": "jax", "version": "0"}],
    [{"event": "bogus"}],
])
def test_anything_out_of_protocol_is_tampering(events):
    p = _ready()
    p.sent("r0")
    with pytest.raises(Tampered) as info:
        for ev in events:
            p.receive(ev)
    assert "r0" not in str(info.value) and "out of protocol" in str(info.value)


def test_events_before_a_run_is_sent_are_tampering():
    p = _ready()
    with pytest.raises(Tampered, match="between"):
        p.receive({"event": "start", "run": "r0"})
    with pytest.raises(Tampered):
        Protocol().receive({"event": "done", "run": "r0"})


def test_the_parent_sends_only_between_runs():
    p = _ready()
    p.sent("r0")
    with pytest.raises(RuntimeError, match="between runs"):
        p.sent("r1")
