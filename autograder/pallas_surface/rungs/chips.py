"""Which TPU a device is, and its figures per JAX device, from JAX's own table.

JAX names a chip from the backend's device kind ("TPU v5 lite" is a v5e,
"TPU v4 lite" a v4i); an unknown kind is None, never an error. JAX's table
(``tpu_info``) holds figures per TensorCore; a JAX device is one TensorCore,
or two on a megacore chip (v4, v5p: ``device.num_cores`` says which), so the
device's bandwidth and peak are the table's times its cores.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figures:
    """One JAX device's figures (0.0 where JAX's table has none)."""
    chip: str
    cores: int
    hbm_bytes_per_s: float
    bf16_flops_per_s: float
    hbm_bytes: float


def chip_of(device_kind: str) -> str | None:
    """JAX's name for the chip of ``device_kind`` ("v5e", "v4i", ...), or None."""
    from jax._src.pallas.mosaic import tpu_info
    version = tpu_info.chip_version_from_device_kind(device_kind)
    return None if version is None else version.value


def figures(chip: str, cores: int) -> Figures:
    """The figures of a device of ``cores`` TensorCores on ``chip``."""
    from jax._src.pallas.mosaic import tpu_info
    version = tpu_info.ChipVersion(chip)
    # The table's figures are per TensorCore whatever it is asked; 1 is valid for every chip.
    info = tpu_info.get_tpu_info_for_chip(version, 1)
    return Figures(chip, cores, float(info.mem_bw_bytes_per_second) * cores,
                   float(info.bf16_ops_per_second) * cores, float(info.hbm_capacity_bytes) * cores)
