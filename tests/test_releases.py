"""A JAX release is one module in pallas_surface/release/ (jax_<release>.py) plus
its lock file: the supported releases are the modules present, each states the
same facts, each has its lock file, and the package's bounds admit exactly
them. No JAX."""
import re
import tomllib
from pathlib import Path

import pytest

from autograder.pallas_surface import release

REPO = Path(__file__).resolve().parent.parent
FOLDER = REPO / "autograder" / "pallas_surface" / "release"


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def test_the_supported_releases_are_the_release_modules_present_oldest_first():
    present = [p.stem[4:].replace("_", ".") for p in FOLDER.glob("jax_*.py")]
    assert len(present) >= 2 and release.SUPPORTED == tuple(sorted(present, key=_key))
    assert release.NEWEST == release.SUPPORTED[-1]
    for version in release.SUPPORTED:
        assert release.facts(version).PINNED == version


def test_every_release_states_the_same_facts():
    def names(version):
        return {k for k in vars(release.facts(version)) if k.isupper()}
    first, *rest = release.SUPPORTED
    for version in rest:
        assert names(version) == names(first), (version, names(version) ^ names(first))
    # The installed release's facts are the package's (as a star import made them).
    mine = release.facts(release.INSTALLED if release.INSTALLED in release.SUPPORTED else release.NEWEST)
    assert all(getattr(release, k) is getattr(mine, k) for k in names(first))


def test_every_release_has_its_lock_file_and_every_lock_file_a_release():
    locks = {p.name[4:-4] for p in (REPO / "requirements").glob("jax-*.txt")}
    assert locks == set(release.SUPPORTED)
    for version in release.SUPPORTED:
        text = (REPO / "requirements" / f"jax-{version}.txt").read_text()
        assert f"\njax=={version}\n" in text and f"\njaxlib=={version}\n" in text, version


def test_the_packages_bounds_admit_exactly_the_supported_releases():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["tpu"]
    bound = f">={release.SUPPORTED[0]},<={release.NEWEST}"
    for name in ("jax", "jaxlib", "jax[tpu]"):
        pins = [d for d in deps if re.match(re.escape(name) + r"[<>=]", d)]
        assert pins == [name + bound], (name, pins)


def test_a_release_module_with_another_name_is_refused_by_name():
    with pytest.raises(ValueError, match=r"joined by _ \(jax_0_12_0_1\); got jax_next\.py"):
        release._release_of("jax_next")
    assert release._release_of("jax_0_12_0_1") == (0, 12, 0, 1)
    with pytest.raises(release.UnsupportedRelease, match="0.9.0"):
        release.facts("0.9.0")
