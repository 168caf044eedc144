"""Disguised copies of a kernel's source, as a student copying it might make
them (the near-duplicate test's planted pairs): every name changed, independent
lines swapped, unused lines added, block-size constants changed, and
re-spellings that compute the same (``jax.jit`` on or off, ``ref[:, :]`` for
``ref[...]``, a dead ``lax.cond(False, ...)``, ``k + 1 == n`` for ``k == n - 1``). Each is a
source-to-source rewrite with Python's ``ast``: what it leaves alone runs as
before."""
from __future__ import annotations

import ast
import hashlib

# A copy's new block sizes: each divides the dimensions of the case the test traces
# (matmul's first case: M = 256, K = 384, N = 256).
BLOCKS = {"BM": 256, "BN": 256, "BK": 64}


def _stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


class _Rename(ast.NodeTransformer):
    """Every name the module defines (functions but ``keep``, parameters,
    variables, constants) to a new one; imports and attributes stay."""

    def __init__(self, tree: ast.Module, salt: str, keep: str):
        names = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef) and n.name != keep:
                names.add(n.name)
            elif isinstance(n, ast.arg):
                names.add(n.arg)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
        self.new = {x: f"v{hashlib.sha256((salt + x).encode()).hexdigest()[:6]}" for x in sorted(names)}

    def visit_Name(self, n: ast.Name) -> ast.Name:
        n.id = self.new.get(n.id, n.id)
        return n

    def visit_arg(self, n: ast.arg) -> ast.arg:
        n.arg = self.new.get(n.arg, n.arg)
        return n

    def visit_FunctionDef(self, n: ast.FunctionDef) -> ast.FunctionDef:
        n.name = self.new.get(n.name, n.name)
        self.generic_visit(n)
        return n


def _independent(a: ast.stmt, b: ast.stmt) -> bool:
    """Two plain assignments to names, neither reading what the other writes,
    not reading one ref both: either order computes the same."""
    if not (isinstance(a, ast.Assign) and isinstance(b, ast.Assign)):
        return False
    if any(not isinstance(t, (ast.Name, ast.Tuple)) for t in a.targets + b.targets):
        return False
    wa, wb, ra, rb = _stored(a), _stored(b), _read(a), _read(b)
    refs = {x for x in ra & rb if x.endswith(("_ref", "_hbm"))}
    return not (wa & rb or wb & ra or wa & wb or refs)


def reorder(tree: ast.Module) -> ast.Module:
    """Every pair of consecutive independent assignments swapped."""
    for f in ast.walk(tree):
        if isinstance(f, ast.FunctionDef):
            i = 0
            while i + 1 < len(f.body):
                if _independent(f.body[i], f.body[i + 1]):
                    f.body[i], f.body[i + 1] = f.body[i + 1], f.body[i]
                    i += 2
                else:
                    i += 1
    return tree


def pad(tree: ast.Module) -> ast.Module:
    """An unused computation at the top of every function (the kernel's, a loop
    body's and a branch's included)."""
    for f in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        f.body.insert(0, ast.parse("unused = jax.lax.iota(jax.numpy.int32, 16) * 3 + 1").body[0])
    return tree


def blocks(tree: ast.Module) -> ast.Module:
    """The module's block-size constants changed (``BM = 128`` or ``BM, BN, BK = 128, 128, 128``)."""
    for n in tree.body:
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            t = n.targets[0]
            names = [e.id for e in t.elts] if isinstance(t, ast.Tuple) else [getattr(t, "id", "")]
            if names and all(x in BLOCKS for x in names):
                values = [ast.Constant(BLOCKS[x]) for x in names]
                n.value = ast.Tuple(values, ast.Load()) if isinstance(t, ast.Tuple) else values[0]
    return tree


def jit(tree: ast.Module, keep: str) -> ast.Module:
    """``@jax.jit`` taken off the entry function, or put on it where it had none."""
    for f in tree.body:
        if isinstance(f, ast.FunctionDef) and f.name == keep:
            plain = [d for d in f.decorator_list if ast.unparse(d) != "jax.jit"]
            f.decorator_list = plain if len(plain) < len(f.decorator_list) else [ast.parse("jax.jit").body[0].value]
    return tree


class _Indexers(ast.NodeTransformer):
    """``ref[...]`` as ``ref[:, :]`` (every ref of the matmul designs is 2-D)."""

    def visit_Subscript(self, n: ast.Subscript) -> ast.Subscript:
        self.generic_visit(n)
        if isinstance(n.slice, ast.Constant) and n.slice.value is Ellipsis:
            n.slice = ast.parse("x[:, :]").body[0].value.slice
        return n


def dead(tree: ast.Module) -> ast.Module:
    """A dead ``lax.cond(False, ...)`` at the top of every kernel body (a function
    with a ``*_ref`` parameter): its live-looking branch zeroes a ref."""
    for f in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        refs = [a.arg for a in f.args.args if a.arg.endswith("_ref")]
        if refs:
            f.body[:0] = ast.parse(f"def _never():\n    {refs[-1]}[...] = jnp.zeros_like({refs[-1]})\n"
                                   "jax.lax.cond(False, _never, lambda: None)").body
    return tree


class _Arithmetic(ast.NodeTransformer):
    """Identities a copier might use: ``a == b - c`` as ``a + c == b``, the operands
    of ``+`` and ``*`` swapped, ``r[...] += v`` as ``r[...] = v + r[...]``."""

    def visit_Compare(self, n: ast.Compare) -> ast.Compare:
        self.generic_visit(n)
        right = n.comparators[0] if len(n.comparators) == 1 else None
        if isinstance(n.ops[0], ast.Eq) and isinstance(right, ast.BinOp) and isinstance(right.op, ast.Sub):
            return ast.Compare(ast.BinOp(n.left, ast.Add(), right.right), n.ops, [right.left])
        return n

    def visit_BinOp(self, n: ast.BinOp) -> ast.BinOp:
        self.generic_visit(n)
        if isinstance(n.op, (ast.Add, ast.Mult)):
            n.left, n.right = n.right, n.left
        return n

    def visit_AugAssign(self, n: ast.AugAssign) -> ast.AST:
        self.generic_visit(n)
        if isinstance(n.op, ast.Add) and isinstance(n.target, ast.Subscript):
            read = ast.Subscript(n.target.value, n.target.slice, ast.Load())
            return ast.Assign([n.target], ast.BinOp(n.value, ast.Add(), read))
        return n


def variant(source: str, *steps: str, salt: str = "a", keep: str = "matmul") -> str:
    """``source`` rewritten by ``steps`` in order ("rename", "reorder", "pad",
    "blocks"; re-spellings that compute the same: "jit", "indexers", "dead", "arith")."""
    tree = ast.parse(source)
    for step in steps:
        tree = _Rename(tree, salt, keep).visit(tree) if step == "rename" else jit(tree, keep) if step == "jit" else \
            {"reorder": reorder, "pad": pad, "blocks": blocks, "dead": dead,
             "indexers": lambda t: _Indexers().visit(t), "arith": lambda t: _Arithmetic().visit(t)}[step](tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
