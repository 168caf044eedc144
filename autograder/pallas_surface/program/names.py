"""The primitives a traced program may name, and what each is outside a kernel
(pure data, no JAX: the parent, the spec reader and the child all read it).

Which primitives the grader rebinds is a property of the design, not a list
chased by hand (``registry`` in the child):

- a *first-order* primitive JAX defines in one of its array modules (lax,
  its special functions, FFT and linear algebra, random, state, Pallas) is
  rebound by its registered name with its parameters decoded by the grammar
  (``schema``): typed data only, never a callable, an object or a sub-program,
  and only if binding it declares no effect;
- the effectful first-order primitives below (``EFFECTFUL``: reads and writes of
  refs, DMAs, semaphores, prints) are reviewed one by one;
- higher-order primitives keep explicit rules (``HIGHER_ORDER``, ``INLINED``,
  ``SPECIAL``); host callbacks are refused wherever they occur.

Outside every kernel a primitive is classified once, here: a move of data
(``MOVES``, ``POSITIONED``), a ref (``REF_OPS``), control (``CONTROL``), or
work (``WORK``: it computes on data). ``static.outside`` charges work as it
always did, and treats a name it finds in none of these as work too; the
coverage test (tests/test_coverage.py) fails on any primitive a public JAX
call emits that is in none, so a new release's primitive gets a decision,
not a student's false charge.
"""
from __future__ import annotations

import re

# -- rebound by name ---------------------------------------------------------
# Reviewed first-order primitives that declare effects (state, DMAs, semaphores,
# prints) or carry a parameter the generic rule would not take; each rebound as is.
EFFECTFUL = frozenset("""
get swap addupdate masked_load masked_swap
program_id num_programs semaphore_signal semaphore_wait semaphore_read delay
dma_start dma_wait prng_seed prng_random_bits debug_print axis_index platform_index dce_sink
""".split())
# Every primitive the first release of this grader listed by name, and the scatters
# (each holds the body that combines an update with the operand, rebuilt like a
# sub-program: outside a kernel, a scatter with a body is work, whatever it does):
# the names a spec's ``[structure] allow`` may list besides the kinds.
FIRST_ORDER = EFFECTFUL | frozenset("""
abs acos acosh add and argmax argmin asin asinh atan atan2 atanh bitcast_convert_type
broadcast_in_dim cbrt ceil clamp clz concatenate convert_element_type copy cos cosh cumlogsumexp
cummax cummin cumprod cumsum digamma div dot_general dynamic_slice dynamic_update_slice eq erf
erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow iota is_finite le lgamma log log1p
logistic lt max min mul mulhi ne neg nextafter not or pad population_count pow real
reduce_and reduce_max reduce_min reduce_or reduce_precision reduce_prod reduce_sum reduce_xor rem
reshape rev round rsqrt select_n shift_left shift_right_arithmetic shift_right_logical sign sin
sinh slice sort split sqrt square squeeze sub tan tanh top_k transpose xor
gather scatter scatter-add scatter-sub scatter-mul scatter-min scatter-max
reduce_window_sum reduce_window_max reduce_window_min
multiple_of bitcast roll stochastic_round pack_elementwise unpack_elementwise stop_gradient
reciprocal
""".split())
# Rebound with their sub-programs rebuilt first.
# mpmd_map: pl.kernel's (and 0.12's pl.core_map's) kernel over a TensorCoreMesh,
# rebuilt as the pallas_call JAX lowers it to on CPU (rebuild._mpmd_map).
HIGHER_ORDER = frozenset({"cond", "while", "scan", "run_scoped", "pallas_call", "mpmd_map"})
# Replaced by their bodies: a call boundary changes nothing the grader measures.
INLINED = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
           "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
           "remat2": "jaxpr", "checkpoint": "jaxpr", "eval_jaxpr": "call_jaxpr"}
# Rebuilt by a rule of their own from what the document keeps of them (``special``):
# check (pl.debug_check, checkify): its message and flags, not its error tree (which
#   holds a traceback object); in a kernel it fires on the interpreters (rung.checked);
# reduce (lax.reduce with a computation of the student's, jnp.minmax): its computation
#   is the sub-program the document holds, not a Python function;
# empty (jnp.empty, lax.empty): zeros, as XLA:CPU lowers it, on every platform (a TPU
#   lowers it to a buffer never written, which could hold an earlier run's data).
SPECIAL = frozenset({"check", "reduce", "empty"})
# Host callbacks run Python the grader would have to take from the student.
HOST_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback"})
# Never rebound, whatever module defines them: they reach the host or run code the
# document would name (a foreign function by its registered name, a Mosaic module), or
# hand out memory never written (empty2: an allocation).
NEVER = HOST_CALLBACKS | frozenset({"ffi_call", "custom_call", "tpu_custom_call", "xla_call", "infeed", "outfeed",
                                    "send", "recv", "callback", "device_put", "create_token", "after_all",
                                    "empty2"})
# What to write instead of a call the grader cannot rebuild (by the primitive it emits).
INSTEAD = {
    "create_token": "drop the token: a kernel's operations are ordered by their data",
    "after_all": "drop the token: a kernel's operations are ordered by their data",
    "device_put": "drop jax.device_put: the grader places every array",
    "ffi_call": "compute it with jax.numpy or jax.lax",
    "custom_call": "compute it with jax.numpy or jax.lax",
    "infeed": "pass the data as an argument",
    "outfeed": "return the data",
}
INSTEAD_ANY = "write that line with other jax.numpy or jax.lax calls (and tell the course staff which call it was)"


def instead(name: str) -> str:
    """What to write instead of a call that emits primitive ``name``."""
    return INSTEAD.get(name, INSTEAD_ANY)


# What the parent accepts as a primitive's name (the child decides whether it rebinds it).
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{0,63}")


def named(name: object) -> bool:
    """A string that could be a primitive's registered name."""
    return isinstance(name, str) and NAME.fullmatch(name) is not None


# -- outside every kernel ------------------------------------------------------
# Each output element is one input element (or a constant), whatever the values.
# stack/unstack/tile: jnp.stack, jnp.roll, jnp.tile; optimization_barrier and
# random_clone: identities; random_wrap/unwrap: a key's words as they are; check,
# empty and dce_sink: no data out (a debug check outside a kernel never fires).
MOVES = frozenset({
    "reshape", "broadcast_in_dim", "transpose", "squeeze", "expand_dims", "rev", "slice", "concatenate",
    "split", "copy", "copy_p", "convert_element_type", "stop_gradient", "debug_print", "stack", "unstack",
    "tile", "optimization_barrier", "random_clone", "random_wrap", "random_unwrap", "check", "empty", "dce_sink"})
# Moves with operands that say where or which: data only in the positions named here
# (pad: the operand, not its fill; select_n: the cases, not the predicate).
POSITIONED = {"pad": (0,), "dynamic_slice": (0,), "dynamic_update_slice": (0, 1), "gather": (0,),
              "scatter": (0, 2), "select_n": None}
# Reads and writes of a ref.
REF_OPS = frozenset({"get", "swap", "addupdate"})
# Walked into: their bodies' primitives are what is classified.
CONTROL = HIGHER_ORDER | frozenset(INLINED)
# Computing on data: work outside a kernel, whatever its size.
WORK = frozenset("""
abs acos acosh add and argmax argmin asin asinh atan atan2 atanh bitcast_convert_type cbrt ceil clamp clz
complex conj cos cosh cumlogsumexp cummax cummin cumprod cumsum digamma div dot_general eq erf erf_inv erfc
exp exp2 expm1 floor ge gt imag integer_pow iota is_finite le lgamma log log1p log2 logistic lt max min mul
mulhi ne neg nextafter not or population_count pow real reduce_and reduce_max reduce_min reduce_or
reduce_precision reduce_prod reduce_sum reduce_xor rem round rsqrt shift_left shift_right_arithmetic
shift_right_logical sign sin sinh sort sqrt square sub tan tanh top_k xor reciprocal
bessel_i0e bessel_i1e igamma igamma_grad_a igammac polygamma regularized_incomplete_beta zeta
random_gamma random_gamma_grad
polynomial one_minus_square lt_to le_to fft reduce
scatter-add scatter_add scatter-mul scatter_mul scatter-min scatter_min scatter-max scatter_max scatter_sub
scatter-sub scatter_apply reduce_window_sum reduce_window_max reduce_window_min reduce_window select_and_scatter_add
select_and_gather_add select_and_scatter cumred conv_general_dilated approx_top_k ragged_dot_general ragged_dot
rng_bit_generator rng_uniform
cholesky cholesky_update eig eigh lu lu_pivots_to_permutation qr householder_product geqrf geqp3 svd
triangular_solve schur hessenberg tridiagonal tridiagonal_solve tridiagonal_solve_p
random_seed random_bits random_split random_fold_in threefry2x32 philox2x32 philox4x32 threefry4x32 iota_2x32_shape
platform_index axis_index psum pmax pmin ppermute all_gather all_to_all psum_scatter reduce_scatter pbroadcast
multiple_of bitcast roll stochastic_round pack_elementwise unpack_elementwise
""".split())


def outside_kind(name: str) -> str | None:
    """How a primitive counts outside every kernel: "move", "positioned", "ref",
    "control" or "work"; None for a name this table does not classify."""
    for kind, names in (("move", MOVES), ("positioned", POSITIONED), ("ref", REF_OPS), ("control", CONTROL),
                        ("work", WORK)):
        if name in names:
            return kind
    return None
