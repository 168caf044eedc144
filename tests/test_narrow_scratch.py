"""A precision problem whose scratch accumulator is 16-bit on the bfloat16 cases
(``KernelSource.narrow_scratch``, read from each signature's traced kernel): the
fault is the scratch's declaration and the fix says so, over the handout's
general numerics hint. No JAX: documents written in the tracer's form."""
from dataclasses import replace

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity import sources
from autograder.grading.identity.sources import KernelSource, Place, Sources

MATMUL = assignments.find("matmul")
SCRATCH = Place("matmul.py:38", "scratch_shapes=[pltpu.VMEM((BM, BN), x.dtype)],")


def _ref(dt, space="VMEM"):
    return {"v": 1, "aval": {"ref": [{"sa": [[128, 128], {"dt": dt}, False]}, {"e": ["TPUMemorySpace", space]}]}}


def test_the_scratch_refs_of_a_16_bit_dtype_are_read_from_the_kernels_invars():
    jaxpr = {"invars": [_ref("bfloat16"), _ref("bfloat16"), _ref("float32"), _ref("bfloat16"), _ref("float32")]}
    assert sources._narrow_scratch(jaxpr, 3) == (0,)
    assert sources._narrow_scratch(jaxpr, 4) == ()
    assert sources._narrow_scratch({"invars": [{"v": 1}, 7, {"aval": {"ref": "x"}}]}, 0) == ()
    assert sources._narrow_scratch(None, 0) == ()


def _kernel(narrow=(0,), dots=()) -> Sources:
    k = KernelSource("matmul.py:29", "matmul", "kernel", "matmul.py:9-21", scratch=SCRATCH,
                     refs=("x_ref", "y_ref", "o_ref"), inputs=2, scratch_refs=("acc_ref",), narrow_scratch=narrow,
                     narrow_dots=dots)
    return Sources((k,), file="matmul.py", text=(), where=lambda f, n: f"{f}:{n}")


def test_a_float32_cases_program_takes_the_bfloat16_cases_narrow_scratch():
    f32, bf16 = _kernel(()), _kernel((0,))
    assert sources.with_narrow_dots(f32, [bf16]).kernels[0].narrow_scratch == (0,)


def test_the_scratch_line_holds_the_fault_and_its_fix_wins_over_the_handouts_hint():
    f = Finding.make("numerics", "generic", "64847 of 65536 outputs are off by up to 0.469: a precision problem",
                     case="bf16-256x384x256")
    fault = evidence.fault(f, _kernel())
    assert (fault.what, fault.place) == ("the scratch's dtype", SCRATCH)
    fix = fixes.fix(f, MATMUL, sources=_kernel())
    assert fix.at == SCRATCH and fix.what == (
        "the scratch acc_ref declared at matmul.py:38 is 16-bit on the bfloat16 cases: a sum kept in 16 bits loses "
        "its low bits at every step; declare it float32 (pltpu.VMEM(shape, jnp.float32), not the inputs' dtype) "
        "and cast once when writing the output")
    # No narrow scratch, a 16-bit product beside it, an overflow's NaN, or a secret case: the hint stands.
    hint = MATMUL.numerics_hint.rstrip(".")
    dot = Place("matmul.py:16", "acc_ref[...] += jnp.dot(x_ref[...], y_ref[...])")
    assert fixes.fix(f, MATMUL, sources=_kernel(())).what == hint
    assert fixes.fix(f, MATMUL, sources=_kernel(dots=(dot,))).what == hint
    assert fixes.fix(f.with_facts(nonfinite=12), MATMUL, sources=_kernel()).what == hint
    assert fixes.fix(f, MATMUL, sources=_kernel(), visible=False).what == hint
    assert evidence.fault(f, replace(_kernel(), kernels=(replace(_kernel().kernels[0], scratch=None),))) is None


def test_an_overflow_is_placed_at_the_kernels_one_exponential_and_keeps_the_handouts_hint():
    softmax = assignments.find("softmax")
    exp = Place("softmax.py:12", "num = jnp.exp(x)")
    one = Sources((KernelSource("softmax.py:20", "softmax", "kernel", "softmax.py:9-14", ops=(("exp", exp),)),),
                  file="softmax.py")
    nan = Finding.make("numerics", "generic", "883 outputs are NaN or Inf", case="logits100-37x128",
                       check="correctness", nonfinite=883)
    assert evidence.fault(nan, one).place == exp
    assert fixes.fix(nan, softmax, sources=one).what == softmax.numerics_hint.rstrip(".")
    # Two exponentials (an online softmax's), or a precision problem (no inf): no line.
    other = Place("softmax.py:13", "e = jnp.exp(m)")
    two = Sources((replace(one.kernels[0], ops=(("exp", exp), ("exp", other))),), file="softmax.py")
    small = Finding.make("numerics", "generic", "3 outputs off", case="logits100-37x128", check="correctness")
    assert evidence.fault(nan, two) is None and evidence.fault(small, one) is None


def test_float32_inputs_rounded_to_bfloat16_before_the_product_are_the_fault_and_the_fix():
    """The ninth read's matmul: ``x_ref[...].astype(jnp.bfloat16)`` and y's the same, then a
    float32-accumulated product: the casts cost the precision, not the accumulation (the
    handout's hint, which the kernel already follows, is not the fix)."""
    def aval(dt):
        return {"sa": [[8, 128], {"dt": dt}, False]}
    read = {"p": "get", "in": [{"v": 1}], "out": [{"v": 10, "aval": aval("float32")}], "params": [], "src": 3}
    cast = {"p": "convert_element_type", "in": [{"v": 10}], "out": [{"v": 11, "aval": aval("bfloat16")}],
            "params": [], "src": 4}
    other = {"p": "convert_element_type", "in": [{"v": 12}], "out": [{"v": 13, "aval": aval("bfloat16")}],
             "params": [], "src": 5}      # (a computed value cast down, as a flash kernel's p: not a read)
    assert sources._narrow_reads({"eqns": [read, cast, other]}) == [4]
    matmul = assignments.find("matmul")
    a = Place("matmul.py:17", "a = x_ref[...].astype(jnp.bfloat16)")
    b = Place("matmul.py:18", "b = y_ref[...].astype(jnp.bfloat16)")
    where = Sources((KernelSource("matmul.py:30", "matmul", "kernel", "matmul.py:10-21",
                                  ops=(("narrow_read", a), ("narrow_read", b))),), file="matmul.py")
    f = Finding.make("numerics", "generic", "off by 0.28%", case="f32-256x384x256", check="correctness")
    assert evidence.fault(f, where).place == a
    assert fixes.fix(f, matmul, sources=where).what == (
        "the kernel casts float32 values it reads to a 16-bit dtype (lines 17 and 18) before it computes with "
        "them: that rounding, not the accumulation, is what costs the precision here. Compute with the inputs "
        "in the dtype they come in")
    # An overflow (NaN or Inf) is not what a cast explains.
    assert evidence.fault(f.with_facts(nonfinite=3), where) is None
