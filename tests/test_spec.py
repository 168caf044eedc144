"""Spec loading: bundled specs load; broken specs name file, key, rule and value."""
import shutil
from pathlib import Path

import pytest

from autograder import spec
from autograder.grading import assignments

REPO = Path(__file__).resolve().parent.parent


def test_bundled_assignments_load():
    assert {"add", "matmul"} <= set(spec.available())
    mm = assignments.find("matmul")
    assert mm.entry_file == "matmul.py" and mm.entry_function == "matmul"
    assert {c.dtype for c in mm.cases} == {"float32", "bfloat16"}
    # Every matmul case spans >= 3 K blocks and >= 2 blocks on M and N.
    for c in mm.cases:
        d = c.dim_map
        assert d["K"] >= 3 * 128 and d["M"] >= 256 and d["N"] >= 256
    add = assignments.find("add")
    assert any(c.dim_map["M"] % 16 for c in add.cases), "a case with M not a multiple of 16"
    assert any(not c.visible for c in add.cases) and any(c.visible for c in add.cases)


def test_unknown_assignment_lists_valid_ones():
    with pytest.raises(LookupError, match="valid: add, dma_scale, flash_attention, matmul, softmax"):
        assignments.find("nope")


def _broken(tmp_path, old, new):
    folder = tmp_path / "add"
    shutil.copytree(REPO / "assignments" / "add", folder)
    text = (folder / "spec.toml").read_text()
    assert old in text
    (folder / "spec.toml").write_text(text.replace(old, new, 1))
    return folder


@pytest.mark.parametrize("old,new,key,value", [
    ("dims = { M = 16, N = 256 }", "dims = { M = 12, N = 256 }", "cases[0].dims.M", "12"),
    ('dtype = "float32"\n\n[[inputs]]', 'dtype = "float64"\n\n[[inputs]]', "inputs[0].dtype", "'float64'"),
    ("seed = 101", 'seed = "x"', "cases[0].seed", "'x'"),
    ("points = 2", "points = -1", "cases[0].points", "-1"),
    ('entry_file = "add.py"', 'entry_file = "add.txt"', "entry_file", "'add.txt'"),
    ('name = "odd-rows"', 'name = "small"', "cases[1].name", "'small'"),
    ("[limits]", "[limitz]", "limitz", "{"),
    ("[probes.races]", "[probes.racez]", "probes.racez", "'racez'"),
    ("seeds = [1, 2]", "seeds = [-1]", "probes.grid-order.seeds", "[-1]"),
    ('probe_cases = ["odd-rows"]', 'probe_cases = ["nope"]', "probe_cases[0]", "'nope'"),
    # Every check runs on every graded case: a subset drawn per grading is no more.
    ('probe_cases = ["odd-rows"]', 'probe_cases = ["odd-rows"]\nprobe_draw = 1', "probe_draw", "1"),
    # Every test keeps its own budget: startup + case_s x 8 tests > the 540 s default total.
    ("case_s = 50", "case_s = 60", "limits.case_s", "60"),
    ("case_s = 50", "case_s = 50\ntotal_s = 570", "limits.total_s", "570"),
    ("[probes.races]", '[probes.numerics]\npoints = 1\n[[probes.numerics.stress]]\nname = "big"\n'
     'dims = { M = 12 }\n[probes.races]', "probes.numerics.stress[0].dims.M", "12"),
    ("[probes.races]", '[probes.numerics]\npoints = 1\n[[probes.numerics.stress]]\nname = "b"\n'
     'dtype = "bfloat16"\n[probes.races]', "probes.numerics.stress[0].dtype", "'bfloat16'"),
    ("[probes.races]", "[probes.numerics]\npoints = 1\n[probes.races]", "probes.numerics.stress", "None"),
    ("seeds = [1, 2]", "seeds = [1, 2]\nstress = []", "probes.grid-order.stress", "[]"),
    # [structure] allow: primitives or the two glue kinds; a ref outside a kernel is never glue.
    ("[probes.races]", '[structure]\nallow = ["add", "fft_magic"]\n[probes.races]', "structure.allow[1]",
     "'fft_magic'"),
    ("[probes.races]", '[structure]\nallow = ["swap"]\n[probes.races]', "structure.allow[0]", "'swap'"),
    ("[probes.races]", '[structure]\nallow = [3]\n[probes.races]', "structure.allow[0]", "3"),
    ("[probes.races]", '[structure]\nallow = [[1]]\n[probes.races]', "structure.allow[0]", "[1]"),
    # A case's own tolerance: a table of two positive numbers.
    ("seed = 101", "seed = 101\ntolerance = 1e-5", "cases[0].tolerance", "1e-05"),
    ("seed = 101", "seed = 101\ntolerance = { rtol = -1.0, atol = 1e-6 }", "cases[0].tolerance.rtol", "-1.0"),
    ("seed = 101", "seed = 101\ntolerance = { rtol = 1e-4 }", "cases[0].tolerance.atol", "None"),
])
def test_broken_spec_names_file_key_rule_and_value(tmp_path, old, new, key, value):
    folder = _broken(tmp_path, old, new)
    with pytest.raises(spec.SpecError) as info:
        assignments.load(folder)
    e = info.value
    assert e.file.endswith("spec.toml") and e.key == key
    assert f"key '{key}'" in str(e) and value in str(e) and e.rule


def test_a_case_may_carry_its_own_tolerance(tmp_path):
    folder = _broken(tmp_path, "seed = 101", "seed = 101\ntolerance = { rtol = 6e-5, atol = 2e-6 }")
    a = assignments.load(folder)
    own, other = a.cases[0], a.cases[1]
    assert a.tolerance(own) == spec.Tolerance(6e-5, 2e-6) and own.tolerance == a.tolerance(own)
    assert a.tolerance(other) == a.tolerance(other.dtype)     # none of its own: its dtype's
    soft = assignments.find("softmax")
    assert {c.name: a_tol.rtol for c in soft.cases if (a_tol := soft.tolerance(c)) != soft.tolerance(c.dtype)} \
        == {"logits100-37x128": 6e-5, "hidden-logits1000": 5e-4, "hidden-wide": 6e-5}


def test_invalid_toml_is_reported(tmp_path):
    folder = _broken(tmp_path, 'title = "', 'title = ')
    with pytest.raises(spec.SpecError, match="must be valid TOML"):
        assignments.load(folder)


def test_the_course_release_line_is_written_first_or_in_place_and_left_out_of_the_hash():
    from autograder.spec import course_release
    spec = 'title = "x"\njax = "0.10.2"\n[limits]\ntotal_s = 600\n'
    assert course_release.with_release(spec, "0.12.0.1") == 'title = "x"\njax = "0.12.0.1"\n[limits]\ntotal_s = 600\n'
    assert course_release.with_release('title = "x"\n', "0.10.2") == 'jax = "0.10.2"\ntitle = "x"\n'
    assert course_release.without_release(spec) == 'title = "x"\n[limits]\ntotal_s = 600\n'
    with pytest.raises(ValueError, match="inside a table"):
        course_release.with_release('title = "x"\n[limits]\njax = 1\n', "0.10.2")


def test_structure_allow_takes_primitives_and_glue_kinds(tmp_path):
    folder = _broken(tmp_path, "[probes.races]",
                     '[structure]\nallow = ["add", "data-index", "data-control"]\n[probes.races]')
    assert assignments.load(folder).structure.allow == ("add", "data-index", "data-control")
