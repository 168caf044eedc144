"""Every public function of jax.numpy (and its linalg and fft), jax.nn, jax.lax and
jax.random, called on small arrays (tests/test_coverage.py).

A function is called by the first of ``TRIES`` that traces, else by its entry
in ``CALLS``; ``NOT_CALLED`` lists, with the reason, each one neither reaches
(no array computation to trace, or one no grading can run). The test fails on
a public function in none of them, so a new release's functions are called too.
"""
from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

MODULES = {"jnp": jnp, "jnp.linalg": jnp.linalg, "jnp.fft": jnp.fft, "jax.nn": jax.nn, "lax": lax,
           "jax.random": jax.random}


def arrays() -> dict:
    """The arrays a call takes, by letter: small, finite, and in every function's domain
    that matters (y positive, s symmetric positive definite, p a probability vector)."""
    x = np.linspace(-0.9, 0.9, 8 * 128, dtype=np.float32).reshape(8, 128)
    s = np.eye(8, dtype=np.float32) * 4 + np.linspace(0, 0.5, 64, dtype=np.float32).reshape(8, 8)
    return {"x": x, "y": np.abs(x) + 0.5, "i": (np.arange(8 * 128, dtype=np.int32) % 7).reshape(8, 128),
            "v": np.linspace(0.1, 0.9, 128, dtype=np.float32), "s": (s + s.T) / 2,
            "b": (np.arange(8 * 128) % 3 == 0).reshape(8, 128), "p": np.full((4,), 0.25, np.float32),
            "u": np.arange(2, dtype=np.uint32), "w": np.arange(4, dtype=np.uint32), "k": jax.random.key(0)}


# (letters of the arrays it takes, how it is called): tried in order.
TRIES = (
    ("x", lambda f: lambda x: f(x)), ("xy", lambda f: lambda x, y: f(x, y)), ("i", lambda f: lambda i: f(i)),
    ("ii", lambda f: lambda i, j: f(i, j)), ("x", lambda f: lambda x: f(x, 1)),
    ("xyy", lambda f: lambda x, y, z: f(x, y, z)), ("k", lambda f: lambda k: f(k)),
    ("k", lambda f: lambda k: f(k, (8, 128))), ("ky", lambda f: lambda k, y: f(k, y)),
    ("ky", lambda f: lambda k, y: f(k, y, (8, 128))), ("kyy", lambda f: lambda k, y, z: f(k, y, z)),
    ("k", lambda f: lambda k: f(k, 2.0, (8, 128))),
)

_DN = lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
_GATHER = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_SCATTER = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))
_ROWS = np.array([[1], [3]], np.int32)


def _img(x):
    return x.reshape(1, 8, 8, 16)


# name -> (letters, function of those arrays).
CALLS = {
    "jnp.apply_along_axis": ("x", lambda x: jnp.apply_along_axis(jnp.sum, 1, x)),
    "jnp.apply_over_axes": ("x", lambda x: jnp.apply_over_axes(jnp.sum, x, [0])),
    "jnp.arange": ("x", lambda x: jnp.arange(128.0) * x),
    "jnp.argwhere": ("b", lambda b: jnp.argwhere(b, size=4)),
    "jnp.astype": ("x", lambda x: jnp.astype(x, jnp.int32)),
    "jnp.bartlett": ("x", lambda x: jnp.bartlett(128) * x),
    "jnp.bincount": ("i", lambda i: jnp.bincount(i.ravel(), length=8)),
    "jnp.blackman": ("x", lambda x: jnp.blackman(128) * x),
    "jnp.choose": ("ixy", lambda i, x, y: jnp.choose(i % 2, [x, y], mode="clip")),
    "jnp.compress": ("xb", lambda x, b: jnp.compress(b[0], x, axis=1, size=4)),
    "jnp.convolve": ("v", lambda v: jnp.convolve(v, v[:8])),
    "jnp.correlate": ("v", lambda v: jnp.correlate(v, v[:8])),
    "jnp.cross": ("x", lambda x: jnp.cross(x[:, :3], x[:, 3:6])),
    "jnp.cumulative_prod": ("x", lambda x: jnp.cumulative_prod(x, axis=1)),
    "jnp.cumulative_sum": ("x", lambda x: jnp.cumulative_sum(x, axis=1)),
    "jnp.diag_indices": ("x", lambda x: x[jnp.diag_indices(8)]),
    "jnp.diag_indices_from": ("s", lambda s: s[jnp.diag_indices_from(s)]),
    "jnp.digitize": ("xv", lambda x, v: jnp.digitize(x, v)),
    "jnp.dsplit": ("x", lambda x: jnp.dsplit(x.reshape(8, 16, 8), 2)),
    "jnp.einsum": ("xx", lambda x, z: jnp.einsum("ij,kj->ik", x, z)),
    "jnp.empty": ("x", lambda x: jnp.empty((8, 128)) * 0 + x),
    "jnp.extract": ("bx", lambda b, x: jnp.extract(b, x, size=4)),
    "jnp.eye": ("s", lambda s: jnp.eye(8) + s),
    "jnp.fill_diagonal": ("s", lambda s: jnp.fill_diagonal(s, 1.0, inplace=False)),
    "jnp.flatnonzero": ("b", lambda b: jnp.flatnonzero(b, size=4)),
    "jnp.fromfunction": ("x", lambda x: jnp.fromfunction(lambda a, c: a + c, (8, 128)) + x),
    "jnp.full": ("x", lambda x: jnp.full((8, 128), 2.0) + x),
    "jnp.hamming": ("x", lambda x: jnp.hamming(128) * x),
    "jnp.hanning": ("x", lambda x: jnp.hanning(128) * x),
    "jnp.histogram2d": ("vv", lambda v, w: jnp.histogram2d(v, w, bins=4)[0]),
    "jnp.histogramdd": ("x", lambda x: jnp.histogramdd(x[:, :2], bins=4)[0]),
    "jnp.identity": ("s", lambda s: jnp.identity(8) + s),
    "jnp.indices": ("i", lambda i: jnp.indices((8, 128)).sum(0) + i),
    "jnp.insert": ("x", lambda x: jnp.insert(x, 2, 0.5, axis=1)),
    "jnp.interp": ("xvv", lambda x, v, w: jnp.interp(x, v, w)),
    "jnp.intersect1d": ("ii", lambda i, j: jnp.intersect1d(i[0], j[1], size=4)),
    "jnp.ix_": ("x", lambda x: x[jnp.ix_(jnp.arange(2), jnp.arange(3))]),
    "jnp.kaiser": ("x", lambda x: jnp.kaiser(128, 3.0) * x),
    "jnp.matmul": ("xx", lambda x, z: jnp.matmul(x, z.T)),
    "jnp.meshgrid": ("vv", lambda v, w: jnp.meshgrid(v, w)[0]),
    "jnp.moveaxis": ("x", lambda x: jnp.moveaxis(x, 0, 1)),
    "jnp.nanquantile": ("x", lambda x: jnp.nanquantile(x, 0.5)),
    "jnp.nonzero": ("b", lambda b: jnp.nonzero(b, size=4)),
    "jnp.ones": ("x", lambda x: jnp.ones((8, 128)) + x),
    "jnp.permute_dims": ("x", lambda x: jnp.permute_dims(x, (1, 0))),
    "jnp.piecewise": ("x", lambda x: jnp.piecewise(x, [x < 0], [lambda a: -a, lambda a: a])),
    "jnp.place": ("xb", lambda x, b: jnp.place(x, b, jnp.array([1.0]), inplace=False)),
    "jnp.poly": ("v", lambda v: jnp.poly(v[:4])),
    "jnp.polyder": ("v", lambda v: jnp.polyder(v[:4])),
    "jnp.polydiv": ("vv", lambda v, w: jnp.polydiv(v[:4], w[:2])[0]),
    "jnp.polyfit": ("vv", lambda v, w: jnp.polyfit(v, w, 2)),
    "jnp.polyint": ("v", lambda v: jnp.polyint(v[:4])),
    "jnp.polymul": ("vv", lambda v, w: jnp.polymul(v[:4], w[:3])),
    "jnp.put": ("x", lambda x: jnp.put(x, jnp.array([0, 3]), 1.0, inplace=False)),
    "jnp.put_along_axis": ("xi", lambda x, i: jnp.put_along_axis(x, i[:, :2], 1.0, axis=1, inplace=False)),
    "jnp.quantile": ("x", lambda x: jnp.quantile(x, 0.5)),
    "jnp.ravel_multi_index": ("i", lambda i: jnp.ravel_multi_index((i[0], i[1]), (8, 8), mode="clip")),
    "jnp.reshape": ("x", lambda x: jnp.reshape(x, (16, 64))),
    "jnp.roots": ("v", lambda v: jnp.roots(v[:4], strip_zeros=False)),
    "jnp.searchsorted": ("vx", lambda v, x: jnp.searchsorted(v, x)),
    "jnp.setdiff1d": ("ii", lambda i, j: jnp.setdiff1d(i[0], j[1], size=4)),
    "jnp.setxor1d": ("ii", lambda i, j: jnp.setxor1d(i[0], j[1], size=4)),
    "jnp.swapaxes": ("x", lambda x: jnp.swapaxes(x, 0, 1)),
    "jnp.tri": ("s", lambda s: jnp.tri(8) * s),
    "jnp.tril_indices": ("s", lambda s: s[jnp.tril_indices(8)]),
    "jnp.triu_indices": ("s", lambda s: s[jnp.triu_indices(8)]),
    "jnp.union1d": ("ii", lambda i, j: jnp.union1d(i[0], j[1], size=4)),
    "jnp.unique": ("i", lambda i: jnp.unique(i, size=8)),
    "jnp.unique_all": ("i", lambda i: jnp.unique_all(i, size=8).values),
    "jnp.unique_counts": ("i", lambda i: jnp.unique_counts(i, size=8).counts),
    "jnp.unique_inverse": ("i", lambda i: jnp.unique_inverse(i, size=8).inverse_indices),
    "jnp.unique_values": ("i", lambda i: jnp.unique_values(i, size=8)),
    "jnp.unpackbits": ("i", lambda i: jnp.unpackbits(i.astype(jnp.uint8))),
    "jnp.vander": ("v", lambda v: jnp.vander(v, 4)),
    "jnp.vecmat": ("xx", lambda x, z: jnp.vecmat(x[0], z.T)),
    "jnp.vectorize": ("x", lambda x: jnp.vectorize(lambda a: a * 2)(x)),
    "jnp.zeros": ("x", lambda x: jnp.zeros((8, 128)) + x),
    "jnp.tile": ("x", lambda x: jnp.tile(x, (2, 1))),
    "jnp.stack": ("xy", lambda x, y: jnp.stack([x, y])),
    "jnp.roll": ("xi", lambda x, i: jnp.roll(x, i[0, 3], axis=1)),
    "jnp.linalg.cholesky": ("s", jnp.linalg.cholesky),
    "jnp.linalg.cross": ("x", lambda x: jnp.linalg.cross(x[:, :3], x[:, 3:6])),
    "jnp.linalg.det": ("s", jnp.linalg.det),
    "jnp.linalg.eig": ("s", lambda s: jnp.abs(jnp.linalg.eig(s)[0])),
    "jnp.linalg.eigh": ("s", lambda s: jnp.linalg.eigh(s)[0]),
    "jnp.linalg.eigvals": ("s", lambda s: jnp.abs(jnp.linalg.eigvals(s))),
    "jnp.linalg.eigvalsh": ("s", jnp.linalg.eigvalsh),
    "jnp.linalg.inv": ("s", jnp.linalg.inv),
    "jnp.linalg.matmul": ("xx", lambda x, z: jnp.linalg.matmul(x, z.T)),
    "jnp.linalg.matrix_power": ("s", lambda s: jnp.linalg.matrix_power(s, 3)),
    "jnp.linalg.multi_dot": ("ss", lambda s, t: jnp.linalg.multi_dot([s, t, s])),
    "jnp.linalg.outer": ("vv", jnp.linalg.outer),
    "jnp.linalg.slogdet": ("s", lambda s: jnp.linalg.slogdet(s)[1]),
    "jnp.linalg.solve": ("sx", lambda s, x: jnp.linalg.solve(s, x)),
    "jnp.linalg.tensorinv": ("s", lambda s: jnp.linalg.tensorinv(s.reshape(2, 4, 8), ind=2)),
    "jnp.linalg.tensorsolve": ("sv", lambda s, v: jnp.linalg.tensorsolve(s, v[:8])),
    "jnp.fft.fftfreq": ("v", lambda v: jnp.fft.fftfreq(128) * v),
    "jnp.fft.rfftfreq": ("v", lambda v: jnp.fft.rfftfreq(254) * v),
    "lax.argmax": ("x", lambda x: lax.argmax(x, 1, jnp.int32)),
    "lax.argmin": ("x", lambda x: lax.argmin(x, 1, jnp.int32)),
    "lax.associative_scan": ("x", lambda x: lax.associative_scan(jnp.add, x, axis=1)),
    "lax.batch_matmul": ("xx", lambda x, z: lax.batch_matmul(x.reshape(2, 4, 128), z.reshape(2, 128, 4))),
    "lax.bitcast_convert_type": ("x", lambda x: lax.bitcast_convert_type(x, jnp.int32)),
    "lax.broadcast_in_dim": ("v", lambda v: lax.broadcast_in_dim(v, (8, 128), (1,))),
    "lax.broadcasted_iota": ("x", lambda x: lax.broadcasted_iota(jnp.float32, (8, 128), 1) * x),
    "lax.composite": ("x", lambda x: lax.composite(lambda a: a * 2, name="course.double")(x)),
    "lax.concatenate": ("xy", lambda x, y: lax.concatenate([x, y], 0)),
    "lax.cond": ("xy", lambda x, y: lax.cond(x[0, 0] > 0, lambda: x, lambda: y)),
    "lax.conv": ("x", lambda x: lax.conv(_img(x), jnp.ones((2, 8, 3, 3)), (1, 1), "SAME")),
    "lax.conv_general_dilated": ("x", lambda x: lax.conv_general_dilated(
        _img(x), jnp.ones((2, 8, 3, 3)), (1, 1), "SAME", dimension_numbers=_DN)),
    "lax.conv_general_dilated_local": ("x", lambda x: lax.conv_general_dilated_local(
        _img(x), jnp.ones((2, 8 * 9, 8, 16)), (1, 1), "SAME", (3, 3))),
    "lax.conv_general_dilated_patches": ("x", lambda x: lax.conv_general_dilated_patches(
        _img(x), (3, 3), (1, 1), "SAME")),
    "lax.conv_transpose": ("x", lambda x: lax.conv_transpose(
        _img(x), jnp.ones((3, 3, 8, 2)), (1, 1), "SAME", dimension_numbers=("NCHW", "HWIO", "NCHW"))),
    "lax.conv_with_general_padding": ("x", lambda x: lax.conv_with_general_padding(
        _img(x), jnp.ones((2, 8, 3, 3)), (1, 1), ((1, 1), (1, 1)), None, None)),
    "lax.convert_element_type": ("x", lambda x: lax.convert_element_type(x, jnp.int32)),
    "lax.custom_linear_solve": ("sv", lambda s, v: lax.custom_linear_solve(
        lambda a: s @ a, v[:8], lambda mv, b: jnp.linalg.solve(s, b))),
    "lax.custom_root": ("y", lambda y: lax.custom_root(
        lambda a: a * a - y, y, lambda f, a: a - f(a) / (2 * a), lambda g, a: a / 2)),
    "lax.dot": ("xx", lambda x, z: lax.dot(x, z.T)),
    "lax.dot_general": ("xx", lambda x, z: lax.dot_general(x, z, (((1,), (1,)), ((), ())))),
    "lax.dynamic_slice": ("xi", lambda x, i: lax.dynamic_slice(x, (i[0, 1], 0), (2, 128))),
    "lax.dynamic_slice_in_dim": ("xi", lambda x, i: lax.dynamic_slice_in_dim(x, i[0, 1], 2)),
    "lax.dynamic_update_index_in_dim": ("xi", lambda x, i: lax.dynamic_update_index_in_dim(x, x[0], i[0, 1], 0)),
    "lax.dynamic_update_slice": ("xi", lambda x, i: lax.dynamic_update_slice(x, x[:2], (i[0, 1], 0))),
    "lax.dynamic_update_slice_in_dim": ("xi", lambda x, i: lax.dynamic_update_slice_in_dim(x, x[:2], i[0, 1], 0)),
    "lax.empty": ("x", lambda x: lax.empty((8, 128), jnp.float32) * 0 + x),
    "lax.expand_dims": ("x", lambda x: lax.expand_dims(x, (0,))),
    "lax.fft": ("x", lambda x: lax.fft(x.astype(jnp.complex64), lax.FftType.FFT, (128,))),
    "lax.fori_loop": ("x", lambda x: lax.fori_loop(0, 3, lambda n, a: a * 2 + n, x)),
    "lax.full": ("x", lambda x: lax.full((8, 128), 2.0) + x),
    "lax.gather": ("x", lambda x: lax.gather(x, _ROWS, _GATHER, (1, 128), mode=lax.GatherScatterMode.CLIP)),
    "lax.imag": ("x", lambda x: lax.imag(x.astype(jnp.complex64))),
    "lax.index_take": ("xi", lambda x, i: lax.index_take(x, (i[:, 0],), (0,))),
    "lax.iota": ("x", lambda x: lax.iota(jnp.float32, 128) * x),
    "lax.map": ("x", lambda x: lax.map(jnp.sum, x)),
    "lax.pad": ("x", lambda x: lax.pad(x, 0.0, ((1, 1, 0), (0, 0, 1)))),
    "lax.platform_dependent": ("x", lambda x: lax.platform_dependent(x, tpu=jnp.sin, default=jnp.cos)),
    "lax.polynomial": ("x", lambda x: lax.polynomial(x, jnp.array([1.0, 2.0, 3.0]))),
    "lax.ragged_dot": ("xx", lambda x, z: lax.ragged_dot(x, z.reshape(2, 128, 4), jnp.array([4, 4], jnp.int32))),
    "lax.ragged_dot_general": ("xx", lambda x, z: lax.ragged_dot_general(
        x, z.reshape(2, 128, 4), jnp.array([4, 4], jnp.int32), lax.RaggedDotDimensionNumbers(
            (((1,), (1,)), ((), ())), (0,), (0,)))),
    "lax.real": ("x", lambda x: lax.real(x.astype(jnp.complex64))),
    "lax.reduce": ("x", lambda x: lax.reduce(x, 0.0, lax.add, (1,))),
    "lax.reduce_and": ("b", lambda b: lax.reduce_and(b, (1,))),
    "lax.reduce_max": ("x", lambda x: lax.reduce_max(x, (1,))),
    "lax.reduce_min": ("x", lambda x: lax.reduce_min(x, (1,))),
    "lax.reduce_or": ("b", lambda b: lax.reduce_or(b, (1,))),
    "lax.reduce_precision": ("x", lambda x: lax.reduce_precision(x, 5, 10)),
    "lax.reduce_prod": ("x", lambda x: lax.reduce_prod(x, (1,))),
    "lax.reduce_sum": ("x", lambda x: lax.reduce_sum(x, (1,))),
    "lax.reduce_window": ("x", lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 2), (1, 1), "SAME")),
    "lax.reduce_xor": ("i", lambda i: lax.reduce_xor(i, (1,))),
    "lax.rev": ("x", lambda x: lax.rev(x, (1,))),
    "lax.rng_bit_generator": ("w", lambda w: lax.rng_bit_generator(w, (8, 128))[1]),
    "lax.rng_uniform": ("x", lambda x: lax.rng_uniform(0.0, 1.0, (8, 128)) * 0 + x),
    "lax.scan": ("x", lambda x: lax.scan(lambda c, r: (c + r, c * r), x[0], x)[1]),
    "lax.scatter": ("x", lambda x: lax.scatter(x, _ROWS, x[:2], _SCATTER)),
    "lax.scatter_add": ("x", lambda x: lax.scatter_add(x, _ROWS, x[:2], _SCATTER)),
    "lax.scatter_apply": ("x", lambda x: lax.scatter_apply(x, _ROWS, jnp.exp, _SCATTER, update_shape=(2, 128))),
    "lax.scatter_max": ("x", lambda x: lax.scatter_max(x, _ROWS, x[:2], _SCATTER)),
    "lax.scatter_min": ("x", lambda x: lax.scatter_min(x, _ROWS, x[:2], _SCATTER)),
    "lax.scatter_mul": ("x", lambda x: lax.scatter_mul(x, _ROWS, x[:2], _SCATTER)),
    "lax.scatter_sub": ("x", lambda x: lax.scatter_sub(x, _ROWS, x[:2], _SCATTER)),
    "lax.select": ("bxy", lambda b, x, y: lax.select(b, x, y)),
    "lax.slice": ("x", lambda x: lax.slice(x, (0, 0), (4, 64))),
    "lax.slice_in_dim": ("x", lambda x: lax.slice_in_dim(x, 0, 4)),
    "lax.split": ("x", lambda x: lax.split(x, (4, 4))),
    "lax.squeeze": ("x", lambda x: lax.squeeze(x[:1], (0,))),
    "lax.switch": ("ixy", lambda i, x, y: lax.switch(i[0, 1], [lambda: x, lambda: y])),
    "lax.tile": ("x", lambda x: lax.tile(x, (2, 1))),
    "lax.transpose": ("x", lambda x: lax.transpose(x, (1, 0))),
    "lax.while_loop": ("x", lambda x: lax.while_loop(lambda a: a[0, 0] < 4, lambda a: a + 1, x)),
    "jax.random.PRNGKey": ("x", lambda x: jax.random.uniform(jax.random.PRNGKey(1), (8, 128)) + x),
    "jax.random.ball": ("k", lambda k: jax.random.ball(k, 3)),
    "jax.random.fold_in": ("k", lambda k: jax.random.key_data(jax.random.fold_in(k, 3))),
    "jax.random.key": ("x", lambda x: jax.random.uniform(jax.random.key(1), (8, 128)) + x),
    "jax.random.multinomial": ("kp", lambda k, p: jax.random.multinomial(k, 10.0, p)),
    "jax.random.multivariate_normal": ("ks", lambda k, s: jax.random.multivariate_normal(k, s[0], s)),
    "jax.random.orthogonal": ("k", lambda k: jax.random.orthogonal(k, 4)),
    "jax.random.randint": ("k", lambda k: jax.random.randint(k, (8, 128), 0, 10)),
    "jax.random.triangular": ("k", lambda k: jax.random.triangular(k, 0.0, 0.5, 1.0)),
    "jax.random.wrap_key_data": ("u", lambda u: jax.random.uniform(jax.random.wrap_key_data(u), (4,))),
    "jax.random.split": ("k", lambda k: jax.random.key_data(jax.random.split(k))),
    "jax.random.clone": ("k", lambda k: jax.random.key_data(jax.random.clone(k))),
}

# What no call here reaches, and why.
_NOT_ARRAYS = "no array computation: it answers about shapes, dtypes or settings"
_FILES = "reads or writes files or Python objects: not a kernel's"
_COLLECTIVE = "a collective over named mesh axes: only pl.kernel's mesh runs one (its axis_index is graded)"
NOT_CALLED = {
    **{n: _NOT_ARRAYS for n in (
        "jnp.array_repr", "jnp.array_str", "jnp.broadcast_shapes", "jnp.einsum_path", "jnp.get_printoptions",
        "jnp.printoptions", "jnp.promote_types", "jnp.result_type", "jnp.set_printoptions",
        "jax.nn.get_scaled_dot_general_config", "lax.broadcast_shapes", "lax.conv_dimension_numbers",
        "lax.conv_general_permutations", "lax.conv_general_shape_tuple", "lax.conv_shape_tuple",
        "lax.conv_transpose_shape_tuple", "lax.dtype", "lax.padtype_to_pads", "lax.reduce_window_shape_tuple",
        "jax.random.key_dtype", "jax.random.key_impl", "jax.random.default_prng_impl", "jnp.can_cast",
        "jnp.isdtype", "jnp.issubdtype", "jnp.iscomplexobj", "jnp.isrealobj", "jnp.isscalar", "jnp.iterable",
        "jnp.ndim", "jnp.shape", "jnp.size", "jnp.dtype", "jnp.finfo", "jnp.iinfo", "jnp.result_type",
        "jnp.get_printoptions")},
    **{n: _FILES for n in ("jnp.load", "jnp.save", "jnp.savez", "jnp.fromfile", "jnp.frombuffer", "jnp.fromiter",
                           "jnp.fromstring", "jnp.from_dlpack", "jnp.frompyfunc")},
    **{n: _COLLECTIVE for n in (
        "lax.all_gather", "lax.all_to_all", "lax.axis_index", "lax.axis_size", "lax.pbroadcast", "lax.pcast",
        "lax.pmean", "lax.ppermute", "lax.pshuffle", "lax.psum_scatter", "lax.psum_scatter_start",
        "lax.pswapaxes", "lax.ragged_all_to_all", "lax.with_sharding_constraint", "lax.psum", "lax.pmax",
        "lax.pmin", "lax.pvary", "lax.precv", "lax.psend", "lax.all_gather_start", "lax.psum_start")},
    "lax.after_all": "tokens order effects, and a kernel's function has none: the grader refuses them by name",
    "lax.create_token": "tokens order effects, and a kernel's function has none: the grader refuses them by name",
    "jnp.trim_zeros": "its result's size depends on the data: it cannot be traced",
    "jnp.mask_indices": "its result's size depends on the mask function's values: it cannot be traced",
    "jax.nn.scaled_matmul": "cuDNN's scaled_matmul_wrapper primitive (a GPU library's): not one of JAX's array "
                            "modules, so not rebuilt; no TPU kernel calls it",
    "lax.scaled_dot": "scaled float8 operands with block scales: no CPU lowering in either release",
    "jax.nn.scaled_dot_general": "scaled float8 operands with block scales: no CPU lowering in either release",
}


# Public calls outside those modules that a kernel's function may make.
EXTRA = {"jax.device_put": ("x", lambda x: jax.device_put(x) * 2)}


def public(module) -> list[str]:
    """The public functions of ``module`` (classes, modules and type aliases aside)."""
    return sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))
                  and not inspect.isclass(getattr(module, n)) and not inspect.ismodule(getattr(module, n))
                  and type(getattr(module, n)).__module__ != "typing")


def calls() -> tuple[dict, list[str]]:
    """{qualified name: (letters, function of those arrays)} for every public
    function, and the names reached by no way (to be in NOT_CALLED)."""
    found, missing, a = {}, [], arrays()
    for mname, module in MODULES.items():
        for n in public(module):
            name = f"{mname}.{n}"
            if name in CALLS or name in NOT_CALLED:
                if name in CALLS:
                    found[name] = CALLS[name]
                continue
            f = getattr(module, n)
            for letters, build in TRIES:
                try:
                    jax.make_jaxpr(build(f))(*[a[c] for c in letters])
                except Exception:  # noqa: BLE001 - the next way of calling it
                    continue
                found[name] = (letters, build(f))
                break
            else:
                missing.append(name)
    return {**found, **EXTRA}, missing
