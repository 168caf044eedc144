"""The serialized kernel: every corpus kernel and solution round-trips (traced,
serialized, checked, rebuilt without the student's code) to outputs bit for bit
those of the in-process run on both rungs; hand-made malicious documents are
refused, each with a message naming what."""
import copy
import importlib.util
import json
from pathlib import Path

import pytest
from conftest import corpus

from autograder.pallas_surface.program import schema

# Every test here also runs on the other JAX release (docs/guides/jax-releases.md).
pytestmark = pytest.mark.releases

REPO = Path(__file__).resolve().parent.parent
# Kernels that cannot be traced or run in a test process: they hang, exit or hog memory.
# (chunks_from_wrong_axis.py slices past its array at the first case: JAX refuses it while tracing.)
UNRUNNABLE = {"infinite_loop.py", "dma_wait_before_start.py", "dma_wrong_semaphore.py", "memory_hog.py",
              "prefetch_waited_in_other_slot.py", "fori_wait_on_next_slot_semaphore.py",
              "chunks_from_wrong_axis.py",
              "os_exit_in_call.py", "exits_at_import.py", "raises_in_kernel.py", "wrong_arity.py", "import_error.py",
              "syntax_error.py", "missing_function.py"}
KERNELS = sorted([(p, s) for s in ("add", "matmul", "softmax", "dma_scale")
                  for p in corpus(s).glob("*.py") if p.name not in UNRUNNABLE] +
                 [(REPO / "solutions" / f"{s}.py", s)
                  for s in ("add", "matmul", "softmax", "dma_scale", "flash_attention")] +
                 [(REPO / "tests" / "hostile" / n, "add") for n in ("honest_add.py", "wrong_add.py")])


def _minimal_doc() -> dict:
    return {"format": schema.FORMAT, "sources": [], "out_tree": {"tree": ["default", {"leaf": 0}]},
            "program": {"consts": [], "jaxpr": {
                "constvars": [], "invars": [{"v": 0, "aval": {"sa": [[2], {"dt": "float32"}, False]}}],
                "eqns": [{"p": "neg", "in": [{"v": 0}], "out": [{"v": 1, "aval": {"sa": [[2], {"dt": "float32"},
                                                                                       False]}}],
                          "params": [], "src": None}],
                "outvars": [{"v": 1}]}}}


@pytest.mark.parametrize("mutate,needle", [
    # A name off the grammar, or one never rebound whatever module defines it (the child decides
    # the rest: test_the_child_refuses_what_the_parent_cannot_see).
    (lambda d: d["program"]["jaxpr"]["eqns"][0].update(p="os.system"), "'os.system'"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0].update(p="ffi_call"), "'ffi_call'"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0].update(p="pure_callback"), "host callback"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["fn", {"dc": ["os.system", []]}]),
     "'os.system'"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["fn", {"e": ["subprocess.Popen", "x"]}]),
     "subprocess.Popen"),
    (lambda d: d["program"]["jaxpr"]["invars"][0]["aval"]["sa"].__setitem__(1, {"dt": "object"}), "'object'"),
    (lambda d: d.update(format=99), "format"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", float("nan")]), "NaN"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"f": "1e999"}]), "malformed float"),
    # A forged source line would make the grader's child build a string that long.
    (lambda d: d.update(sources=[["add.py", 300_000_000, "add"]]), "line 1..1000000"),
    (lambda d: d.update(sources=[["add.py", 3, "f" * 5000]]), "at most 200 characters"),
    (lambda d: d.update(sources={"x": 1}), "source table"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", 1 << 80]), "integer out of range"),
])
def test_the_parent_refuses_documents_off_the_allow_list(mutate, needle):
    doc = _minimal_doc()
    mutate(doc)
    with pytest.raises(schema.Refused, match=needle.replace("(", r"\(")):
        schema.loads(json.dumps(doc).encode())


@pytest.mark.parametrize("mutate,needle", [
    # Every name on the allow-list, the structure odd: each crashed the parent's canonical
    # form once (a KeyError, a TypeError), where the old check walked values only.
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["out"].append({"w": 0, "aval": None}), "a variable must be"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0].update(params={"fn": 1}), "in, out and params must be lists"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["ab"]), "pairs"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append([["k"], 1]), "string keys"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["in"].append(7), "an operand must be"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["in"].append({"v": 99}), "read before"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["out"][0].update(v=0), "defined twice"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0].pop("src"), "an equation must be"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0].update(p=["neg"]), "is not one the grader rebuilds"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0].update(src=3), "source table"),
    (lambda d: d["program"]["jaxpr"].pop("outvars"), "constvars, invars, eqns, outvars"),
    (lambda d: d["program"].update(extra=1), "jaxpr, consts"),
    (lambda d: d.update(extra=1), "holds only"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"dc": ["Blocked", {"a": 1}]}]),
     "malformed 'Blocked'"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"e": [["Precision"], "x"]}]), "enum"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"sa": [[2], "float32", False]}]),
     "malformed 'sa'"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"jx": {"eqns": []}}]),
     "constvars, invars, eqns, outvars"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"t": {"a": 1}}]), "malformed 't'"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"d": [[1, 2, 3]]}]), "pairs"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"t": [1], "l": [2]}]), "one tagged"),
])
def test_the_parent_refuses_documents_of_odd_structure(mutate, needle):
    doc = _minimal_doc()
    mutate(doc)
    with pytest.raises(schema.Refused, match=needle):
        schema.loads(json.dumps(doc).encode())


def _node(doc, rng):
    """A container node of ``doc``, found by a random walk down from the root."""
    node = doc
    while rng.random() > 0.15:
        items = list(node.values()) if isinstance(node, dict) else node
        inner = [v for v in items if isinstance(v, (dict, list)) and v]
        if not inner:
            break
        node = rng.choice(inner)
    return node


def _mutate(doc, rng):
    node = _node(doc, rng)
    junk = rng.choice([None, 0, -1, 3, "v", "x", 1.5, [], {}, [1, 2], {"v": 0}, {"lit": 1, "aval": None},
                       {"dt": "float32"}, {"t": []}, True])
    if isinstance(node, dict) and node:
        key = rng.choice(sorted(node, key=str))
        choice = rng.randrange(4)
        if choice == 0:
            node.pop(key)
        elif choice == 1:
            node[key] = copy.deepcopy(junk)
        elif choice == 2:
            node[str(key) + "_"] = node.pop(key)
        else:
            node[key] = [node[key]]
    elif isinstance(node, list):
        choice = rng.randrange(3)
        if choice == 0 and node:
            node.pop(rng.randrange(len(node)))
        elif choice == 1:
            node.insert(rng.randrange(len(node) + 1), copy.deepcopy(junk))
        elif node:
            i = rng.randrange(len(node))
            node[i] = copy.deepcopy(junk)


def _documents_accepted_are_analysable(base: dict, rounds: int, seed: int) -> int:
    """Mutate ``base`` at random; whatever the schema accepts, the parent's analyses
    (canonical form, likeness) read without an exception. Returns how many it accepted."""
    import random

    from autograder.grading.identity import canonical, likeness
    rng, accepted = random.Random(seed), 0
    for _ in range(rounds):
        doc = json.loads(json.dumps(base))
        for _ in range(rng.randrange(1, 4)):
            _mutate(doc, rng)
        try:
            schema.check(doc)
        except schema.Refused:
            continue
        accepted += 1
        canonical.of(doc)
        likeness.of(doc)
    return accepted


def test_every_document_the_schema_accepts_is_one_the_parent_can_analyse():
    assert _documents_accepted_are_analysable(_minimal_doc(), 3000, 1) > 100


def test_deep_and_huge_documents_are_refused():
    deep = _minimal_doc()
    node: dict = {}
    deep["program"]["jaxpr"]["eqns"][0]["params"].append(["x", node])
    for _ in range(schema.MAX_DEPTH + 5):
        node["t"] = [{}]
        node = node["t"][0]
    node["t"] = []
    with pytest.raises(schema.Refused, match="nests deeper"):
        schema.check(deep)
    with pytest.raises(schema.Refused, match="not valid JSON"):
        schema.loads(b"[" * 200_000 + b"]" * 200_000)
    with pytest.raises(schema.Refused, match="limit"):
        schema.loads(b" " * (schema.MAX_DOCUMENT_BYTES + 1))
    assert schema.loads(json.dumps(_minimal_doc()).encode())["format"] == schema.FORMAT


jax_only = pytest.mark.jax


@jax_only
def test_every_real_document_the_schema_accepts_is_one_the_parent_can_analyse():
    """The same, from a solution's traced program (a pallas_call, its grid mapping, index
    maps, a kernel body with control flow)."""
    import jax.numpy as jnp

    from autograder.pallas_surface.program import serial
    from autograder.pallas_surface.rungs import rung
    a, fn = _load(REPO / "solutions" / "matmul.py", "matmul")
    x = jnp.ones((256, 384), jnp.float32)
    doc = serial.encode(rung.trace(fn, [x, x.T]), set())
    schema.check(doc)
    assert _documents_accepted_are_analysable(doc, 600, 2) > 10


@jax_only
@pytest.mark.parametrize("mutate,needle", [
    # A huge constant, a shape of 2^40 elements, an unknown tag, a class by name (the parent
    # refuses the tag too: the child checks again as it decodes).
    (lambda d: d["program"]["consts"].append({"a": ["float32", [4096, 1024], "A" * 8]}), "wrong size"),
    (lambda d: d["program"]["jaxpr"]["invars"][0]["aval"]["sa"].__setitem__(0, [1 << 20, 1 << 20]),
     "more than"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"zz": 1}]), "unknown tag"),
    # A name the grammar allows that no array module of this JAX defines.
    (lambda d: d["program"]["jaxpr"]["eqns"][0].update(p="os_system"), "'os_system'"),
    (lambda d: d["program"]["jaxpr"]["eqns"][0]["params"].append(["x", {"dc": ["GridMapping", [["bogus", 1]]]}]),
     "GridMapping could not be rebuilt"),
])
def test_the_child_refuses_what_the_parent_cannot_see(mutate, needle):
    from autograder.pallas_surface.program import rebuild
    doc = _minimal_doc()
    mutate(doc)
    with pytest.raises(schema.Refused, match=needle):
        rebuild.load(copy.deepcopy(doc))


@jax_only
def test_a_minimal_document_rebuilds_and_runs():
    import jax.numpy as jnp
    import numpy as np

    from autograder.pallas_surface.program import rebuild
    fn = rebuild.load(_minimal_doc()).function()
    np.testing.assert_array_equal(np.asarray(fn(jnp.asarray([1.0, -2.0], jnp.float32))), [-1.0, 2.0])


def _load(path: Path, slug: str):
    from autograder.grading import assignments
    a = assignments.find(slug)
    s = importlib.util.spec_from_file_location(f"rt_{path.parent.name}_{path.stem}", path)
    m = importlib.util.module_from_spec(s)
    import sys
    sys.path.insert(0, str(path.parent))
    try:
        s.loader.exec_module(m)
    finally:
        sys.path.remove(str(path.parent))
    return a, getattr(m, a.entry_function, None) or getattr(m, "honest_add", None) or m.wrong_add


def _run(rung_mod, traced, arrays, which):
    import numpy as np

    from autograder.pallas_surface import release
    try:
        return np.asarray(rung_mod.run(traced, arrays, which), np.float32)
    except Exception as e:  # noqa: BLE001 - an error must round-trip too
        kind, text = rung_mod.unwrap_error(e)
        # A failed pl.debug_check: the rebuild writes the student's line after their message.
        failed = release.CHECK_FAILED.match(text)
        return f"{kind}: {(failed['message'] + ' (`check` failed)') if failed else text[:200]}"
    finally:
        rung_mod.reset_state()


def test_the_round_trip_covers_every_runnable_corpus_kernel_and_solution():
    assert len(KERNELS) == 92


# One test per kernel (not one loop): the parallel workers share the round trips.
@jax_only
@pytest.mark.parametrize("path,slug", KERNELS, ids=[f"{s}/{p.name}" for p, s in KERNELS])
def test_every_corpus_kernel_and_solution_round_trips_bit_for_bit(path, slug):
    import jax.numpy as jnp
    import numpy as np

    from autograder.grading.run import inputs
    from autograder.pallas_surface.program import rebuild, serial
    from autograder.pallas_surface.rungs import hooks, rung
    hooks.install()
    a, fn = _load(path, slug)
    case = a.cases[0]
    values = inputs.make(a, case)
    static = [i for i, v in enumerate(values) if v.kind == "float"]
    args = [v.value if v.kind == "float" else jnp.asarray(v.array, jnp.dtype(v.dtype)) for v in values]
    arrays = [x for i, x in enumerate(args) if i not in static]
    traced = rung.trace(fn, args, static)
    doc = schema.loads(json.dumps(serial.encode(traced, {str(path.resolve())})).encode())
    rebuilt = rung.trace(rebuild.load(doc).function(), arrays)
    assert rebuilt.pallas_calls == traced.pallas_calls, path.name
    for which in ("generic", "tpu-interpret"):
        want, got = _run(rung, traced, arrays, which), _run(rung, rebuilt, arrays, which)
        if isinstance(want, str) or isinstance(got, str):
            shown = [w if isinstance(w, str) else "an array" for w in (want, got)]
            assert shown[0] == shown[1], (path.name, which, *shown)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{path.name} on {which}")


def _outside_cases():
    """(name, function of (x, y, add) where add is a kernel, the violations outside it)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu
    lax = jax.lax

    def scoped(x, y, add):
        def body(r):
            r[...] = x
            return r[...]
        return add(pl.run_scoped(body, pltpu.VMEM(x.shape, x.dtype)), y)

    def counter_rows(x, y, add):       # a loop placing rows at the counter's positions: moves
        def body(i, acc):
            return lax.dynamic_update_slice(acc, lax.dynamic_slice(x, (i * 8, 0), (8, 256)), (i * 8, 0))
        return add(lax.fori_loop(0, 2, body, jnp.zeros_like(x)), y)

    def while_on_data(x, y, add):
        return add(lax.while_loop(lambda c: c[0, 0] < 0, lambda c: c, x), y)

    iota_mask = lambda x: lax.broadcasted_iota(jnp.int32, x.shape, 1) < 128  # noqa: E731
    return [
        ("layout only", lambda x, y, add: add(x.reshape(16, 256), y.T.T), {}),
        ("pad, slice, concatenate, astype", lambda x, y, add: add(
            jnp.concatenate([jnp.pad(x, ((0, 8), (0, 0)))[:8], x[8:]]).astype(jnp.float32), y), {}),
        ("a static mask", lambda x, y, add: add(jnp.where(iota_mask(x), x, 0.0), y), {}),
        ("a gather at a table from the shape", lambda x, y, add: add(x[jnp.arange(16)[::-1] * 1], y), {}),
        ("rows at the counter", counter_rows, {}),
        ("arithmetic", lambda x, y, add: add(x * 2.0, y), {"mul": 1}),
        ("on a kernel's output", lambda x, y, add: add(x, y) + 1.0, {"add": 1}),
        ("a window sum", lambda x, y, add: add(lax.reduce_window(x, 0.0, lax.add, (1, 2), (1, 1), "SAME"), y),
         {"reduce_window_sum": 1}),
        ("a bitcast", lambda x, y, add: add(lax.bitcast_convert_type(
            lax.bitcast_convert_type(x, jnp.int32), jnp.float32), y), {"bitcast_convert_type": 2}),
        ("a lookup at data", lambda x, y, add: add(lax.dynamic_slice(
            x, (x[0, 0].astype(jnp.uint32), jnp.uint32(0)), (16, 256)), y), {"data-index: dynamic_slice": 1}),
        ("a pad filled with data", lambda x, y, add: add(lax.pad(x, x[0, 0], ((0, 0, 0), (0, 0, 0))), y),
         {"pad": 1}),
        ("a mask read from data", lambda x, y, add: add(jnp.where(x.astype(bool), x, 0.0), y),
         {"data-control: select_n": 1}),
        ("a branch on data", lambda x, y, add: add(lax.cond(x[0, 0].astype(bool), lambda: x, lambda: y), y),
         {"data-control: cond": 1}),
        ("a loop on data", while_on_data, {"data-control: while": 1, "lt": 1}),
        ("a ref", scoped, {"ref: run_scoped": 1, "ref: swap": 1, "ref: get": 1}),
    ]


@jax_only
def test_outside_a_kernel_data_may_only_be_moved():
    """The structure check's allow-list (pallas_surface.outside), one case per rule."""
    import jax.numpy as jnp

    from autograder.pallas_surface.rungs import rung
    from autograder.pallas_surface.static import analysis
    _a, add = _load(REPO / "tests" / "hostile" / "honest_add.py", "add")
    x = jnp.ones((16, 256), jnp.float32)
    for name, fn, violations in _outside_cases():
        facts = analysis.structure(rung.trace(lambda a, b, fn=fn: fn(a, b, add), [x, x]))
        assert facts["pallas_calls"] >= 1 and facts["outside"] == violations, (name, facts["outside"])


@jax_only
def test_gather_scatter_window_reductions_and_stop_gradient_round_trip():
    import jax
    import jax.numpy as jnp
    import numpy as np

    from autograder.pallas_surface.program import rebuild, serial
    from autograder.pallas_surface.rungs import rung

    def f(x, i):
        window = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2), (1, 1), "SAME")
        # jax.nn.softmax holds a stop_gradient (an identity when nothing is differentiated).
        return x[i].sum(0) + x.at[i].add(1.0)[0] + window[0] + jax.nn.softmax(x, axis=-1)[0]

    x, i = jnp.arange(12.0).reshape(3, 4), jnp.array([2, 0])
    traced = rung.trace(f, [x, i])
    doc = schema.loads(json.dumps(serial.encode(traced, set())).encode())
    rebuilt = rung.trace(rebuild.load(doc).function(), [x, i])
    for which in ("generic", "tpu-interpret"):
        np.testing.assert_array_equal(np.asarray(rung.run(rebuilt, [x, i], which)), np.asarray(f(x, i)))


PL_KERNELS = ["kernel_double_buffer.py", "kernel_two_cores.py", "kernel_missing_wait.py", "kernel_core_race.py"]


def _pl_kernel_doc(name: str = "kernel_two_cores.py"):
    """A pl.kernel corpus kernel traced and encoded, with its traced function and arrays."""
    import jax.numpy as jnp

    from autograder.grading.run import inputs
    from autograder.pallas_surface.program import serial
    from autograder.pallas_surface.rungs import rung
    path = corpus("dma_scale") / name
    a, fn = _load(path, "dma_scale")
    values = inputs.make(a, a.cases[0])
    args = [v.value if v.kind == "float" else jnp.asarray(v.array, jnp.dtype(v.dtype)) for v in values]
    arrays = [x for v, x in zip(values, args) if v.kind != "float"]
    traced = rung.trace(fn, args, [i for i, v in enumerate(values) if v.kind == "float"])
    return json.loads(json.dumps(serial.encode(traced, {str(path.resolve())}))), traced, arrays


def _mpmd_eqn(doc: dict) -> dict:
    return next(e for e in doc["program"]["jaxpr"]["eqns"] if e["p"] == "mpmd_map")


@jax_only
@pytest.mark.parametrize("name", PL_KERNELS)
def test_pl_kernel_round_trips_bit_for_bit(name):
    """pl.kernel traces to mpmd_map over a TensorCoreMesh (0.10.2 and 0.12): the
    document keeps it, the rebuild binds the pallas_call JAX lowers it to on CPU,
    and every rung (two simulated cores too) gives the same bits as the student's own trace."""
    import numpy as np

    from autograder.pallas_surface.program import rebuild
    from autograder.pallas_surface.rungs import hooks, rung
    hooks.install()
    doc, traced, arrays = _pl_kernel_doc(name)
    assert [e["p"] for e in doc["program"]["jaxpr"]["eqns"]].count("mpmd_map") == 1
    rebuilt = rung.trace(rebuild.load(schema.loads(json.dumps(doc).encode())).function(), arrays)
    assert rebuilt.pallas_calls == traced.pallas_calls == 1
    for which, params in (("generic", None), ("tpu-interpret", None),
                          ("tpu-interpret", {"num_cores_or_threads": 2, "detect_races": True})):
        want = _run_params(rung, traced, arrays, which, params)
        got = _run_params(rung, rebuilt, arrays, which, params)
        if isinstance(want, str) or isinstance(got, str):
            assert want == got, (name, which)
        else:
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{name} {which}")


def _run_params(rung_mod, traced, arrays, which, params):
    import numpy as np
    try:
        return np.asarray(rung_mod.run(traced, arrays, which, params), np.float32)
    except Exception as e:  # noqa: BLE001 - an error must round-trip too
        return f"{rung_mod.unwrap_error(e)[0]}: {rung_mod.unwrap_error(e)[1][:200]}"
    finally:
        rung_mod.reset_state()


def _mesh(doc: dict) -> list:
    meshes = next(v for k, v in _mpmd_eqn(doc)["params"] if k == "meshes")
    return meshes["t"][0]["dc"][1]


@jax_only
@pytest.mark.parametrize("mutate,needle", [
    # A mesh of a billion cores would have TPU interpret mode start a thread per core.
    (lambda d: _mesh(d).__setitem__(1, ["num_cores", 1_000_000_000]), "1 to 2 cores"),
    (lambda d: _mesh(d).__setitem__(1, ["num_cores", True]), "1 to 2 cores"),
    (lambda d: _mesh(d).__setitem__(0, ["axis_name", "x" * 500]), "one axis"),
    (lambda d: _mesh(d).append(["devices", {"l": []}]), "one axis"),
    # Two bodies, or a body that is not a program.
    (lambda d: [p.__setitem__(1, {"t": [p[1]["t"][0], p[1]["t"][0]]}) for p in _mpmd_eqn(d)["params"]
                if p[0] == "jaxprs"], "one kernel body"),
    (lambda d: [p.__setitem__(1, {"t": [1]}) for p in _mpmd_eqn(d)["params"] if p[0] == "jaxprs"],
     "one kernel body"),
    (lambda d: [p.__setitem__(1, {"t": [_mpmd_eqn(d)["params"][0][1]]}) for p in _mpmd_eqn(d)["params"]
                if p[0] == "external_meshes"], "external meshes"),
    (lambda d: [p.__setitem__(1, {"d": [[0, 7]]}) for p in _mpmd_eqn(d)["params"]
                if p[0] == "input_output_aliases"], "aliases"),
    (lambda d: [p.__setitem__(1, {"t": [1]}) for p in _mpmd_eqn(d)["params"] if p[0] == "out_avals"],
     "output types"),
])
def test_malformed_pl_kernel_documents_are_refused(mutate, needle):
    from autograder.pallas_surface.program import rebuild
    from autograder.pallas_surface.rungs import rung
    doc = _pl_kernel_doc()[0]
    mutate(doc)
    with pytest.raises(schema.Refused, match=needle):
        prog = rebuild.load(schema.loads(json.dumps(doc).encode()))
        rung.trace(prog.function(), [__import__("jax").numpy.zeros((192, 256), "float32")])


def test_the_parent_refuses_a_mesh_off_the_allow_list():
    doc = _minimal_doc()
    doc["program"]["jaxpr"]["eqns"][0]["params"].append(["mesh", {"dc": ["GPUMesh", []]}])
    with pytest.raises(schema.Refused, match="'GPUMesh'"):
        schema.loads(json.dumps(doc).encode())


@jax_only
def test_a_print_formats_its_arguments_never_their_attributes(capfd):
    """A format string is the student's: the grader's child formats its fields of the
    arguments ("{}", "{0}", "{name}", with a spec), never an attribute or an item of one,
    which would reach the child's objects ("{0.sharding.__class__.__module__}" printed
    "jax.sharding" from the traced program as it was); such a format prints as its text."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from autograder.pallas_surface.program import rebuild, serial
    from autograder.pallas_surface.rungs import hooks, rung
    hooks.install()

    def kernel(x_ref, o_ref):
        pl.debug_print("reach {0.sharding.__class__.__module__} {1}", x_ref[0, 0], x_ref[0, 1])
        pl.debug_print("plain {} {:.1f}", x_ref[0, 0], x_ref[0, 1])
        o_ref[...] = x_ref[...]

    x = jnp.ones((8, 128), jnp.float32)
    traced = rung.trace(lambda a: pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype))(a), [x])
    doc = schema.loads(json.dumps(serial.encode(traced, set())).encode())
    rung.run(rung.trace(rebuild.load(doc).function(), [x]), [x], "generic")
    out = capfd.readouterr().out
    assert "reach {0.sharding.__class__.__module__} {1}" in out and "jax.sharding" not in out
    assert "plain 1.0 1.0" in out
