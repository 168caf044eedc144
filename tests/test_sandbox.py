"""The capped output tail (pure logic, no JAX)."""
from autograder.isolation import sandbox


def test_the_output_tail_keeps_the_end_and_says_what_was_cut():
    tail = sandbox.Tail()
    for i in range(10_000):
        tail.add(f"line {i}\n".encode())
    text = tail.text()
    assert text.endswith("line 9999\n") and "earlier bytes of output cut" in text
    assert len(text) < sandbox.OUTPUT_TAIL + 100 and tail.total == sum(len(f"line {i}\n") for i in range(10_000))
    short = sandbox.Tail()
    short.add(b"hello\n")
    assert short.text() == "hello\n"
