"""Chip-worker jobs that behave as a kernel can on a real TPU v5e, for the worker
tests (tests/test_chipproc.py): answer, raise, halt the core, hang, or end the process."""
import os
import sys
import time


def answer(device, args, progress):
    progress(phase="call", step=1)
    return {"kind": device.info().kind, "echo": args.get("x")}


def raises(device, args, progress):
    raise ValueError("a bad argument, said by the job")


def halts(device, args, progress):
    """What jax 0.10.2 raised on a v5e when a block index was out of bounds."""
    progress(phase="call", size="speed")
    raise RuntimeError("INTERNAL: RuntimeUnexpectedCoreHalt: BoundsCheck 3 [deref of token:0x2] for "
                       "dma.hbm_to_vmem [thread:$0]")


def hangs(device, args, progress):
    progress(phase="call", size="speed", calls=3)
    time.sleep(3600)


def hangs_in_host_phase(device, args, progress):
    """Silent longer than a call's limit, but in a host phase (allowed longer)."""
    progress(phase="host", what="reference")
    time.sleep(float(args["seconds"]))
    return {"done": True}


def exits(device, args, progress):
    sys.stdout.write("a kernel's debug print on stdout\n")
    sys.stdout.flush()
    os._exit(7)


def halts_in_its_last_words(device, args, progress):
    """A halt said only on stderr before the process dies (no exception reached Python)."""
    sys.stderr.write("F1206 core.cc:42] Semaphore (scratch argument 2) has a nonzero value upon exit\n")
    sys.stderr.flush()
    os._exit(134)


def pid(device, args, progress):
    """Which process answered (the --fresh-process tests)."""
    return {"pid": os.getpid()}
