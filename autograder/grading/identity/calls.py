"""Where each part of a ``pl.pallas_call`` is written, read from the student's
source with ``ast`` (parsed, never run): the ``grid=`` keyword, the
``dimension_semantics``, each operand's index map, the scratch shapes.

The traced program knows the line of the call and of every equation, but a
grid or an index map that computes nothing (``lambda i, j: (i, j)``) leaves no
equation: the feedback's fix points at the line that holds the fault, so this
finds it in the text. Everything here is best effort: a construct it cannot
follow (a spec built in a loop, a grid passed in from elsewhere) gives no line,
and the feedback then names the call.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class CallLines:
    """Module line numbers of one pallas_call's parts (None: not found)."""
    call: int
    grid: int | None = None
    semantics: int | None = None
    in_maps: tuple[int | None, ...] = ()
    out_maps: tuple[int | None, ...] = ()
    scratch: int | None = None


def parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _is_pallas_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "pallas_call") or (isinstance(f, ast.Name)
                                                                        and f.id == "pallas_call")


class _Scope:
    """Names assigned in the function around the call (and at module level), to
    follow ``spec = pl.BlockSpec(...)`` and ``in_specs=[spec, spec]``."""

    def __init__(self, tree: ast.Module, node: ast.AST):
        self.tree, self.line = tree, node.lineno
        self.functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and f.lineno <= node.lineno <= (f.end_lineno or f.lineno)]
        self.functions.sort(key=lambda f: f.lineno, reverse=True)     # innermost first

    def resolve(self, node: ast.AST, depth: int = 0) -> ast.AST:
        if not isinstance(node, ast.Name) or depth > 8:
            return node
        for scope in [*self.functions, self.tree]:
            found = self._assigned(scope, node.id)
            if found is not None:
                return self.resolve(found, depth + 1)
        return node

    def _assigned(self, scope: ast.AST, name: str) -> ast.AST | None:
        last = None
        for stmt in _statements(scope):
            if isinstance(stmt, ast.Assign) and stmt.lineno < self.line and any(
                    isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                last = stmt.value
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                last = stmt
        return last


def _statements(scope: ast.AST):
    """The statements of a scope, into its blocks (if/for/with) but not into nested functions."""
    stack = list(reversed(getattr(scope, "body", [])))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for name in ("body", "orelse", "finalbody"):
            stack.extend(reversed(getattr(stmt, name, []) or []))


def _keyword(call: ast.AST, name: str) -> ast.keyword | None:
    if not isinstance(call, ast.Call):
        return None
    return next((k for k in call.keywords if k.arg == name), None)


def _elements(node: ast.AST, scope: _Scope) -> list[ast.AST] | None:
    node = scope.resolve(node)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [scope.resolve(e) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):     # [spec] * 2
        for seq, count in ((node.left, node.right), (node.right, node.left)):
            seq = scope.resolve(seq)
            if isinstance(seq, (ast.List, ast.Tuple)) and isinstance(count, ast.Constant) \
                    and isinstance(count.value, int) and 0 < count.value <= 64:
                return [scope.resolve(e) for e in seq.elts] * count.value
    if isinstance(node, ast.Call):
        return [node]                  # one spec for one operand
    return None


def _index_map_line(spec: ast.AST, scope: _Scope) -> int | None:
    """The line of a BlockSpec's index map (the lambda, or the def's return), else the spec's."""
    if not isinstance(spec, ast.Call):
        return getattr(spec, "lineno", None)
    kw = _keyword(spec, "index_map")
    fn = kw.value if kw is not None else spec.args[1] if len(spec.args) > 1 else None
    if fn is None:
        return spec.lineno
    fn = scope.resolve(fn)
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
        return returns[-1].lineno if returns else fn.lineno
    return getattr(fn, "lineno", spec.lineno)


def _semantics_line(call: ast.Call, scope: _Scope) -> int | None:
    kw = _keyword(call, "compiler_params")
    if kw is None:
        return None
    params = scope.resolve(kw.value)
    inner = _keyword(params, "dimension_semantics")
    if inner is not None:
        return inner.lineno
    if isinstance(params, ast.Dict):      # {"mosaic": {"dimension_semantics": ...}}
        for d in ast.walk(params):
            if isinstance(d, ast.Dict):
                for k, v in zip(d.keys, d.values):
                    if isinstance(k, ast.Constant) and k.value == "dimension_semantics":
                        return v.lineno
    return kw.lineno


def _part(call: ast.Call, name: str, scope: _Scope) -> ast.keyword | None:
    """A keyword of the call, or of the grid spec it is given (PrefetchScalarGridSpec)."""
    kw = _keyword(call, name)
    if kw is None:
        spec = _keyword(call, "grid_spec")
        kw = _keyword(scope.resolve(spec.value), name) if spec is not None else None
    return kw


def _maps(call: ast.Call, name: str, scope: _Scope) -> tuple[int | None, ...]:
    kw = _part(call, name, scope)
    specs = _elements(kw.value, scope) if kw is not None else None
    return tuple(_index_map_line(s, scope) for s in specs) if specs else ()


def of_call(tree: ast.Module, line: int) -> CallLines | None:
    """The parts of the pallas_call the traced program says is at ``line``: the
    call whose text spans that line (the innermost), else the file's only one."""
    found = [n for n in ast.walk(tree) if _is_pallas_call(n)]
    spanning = [n for n in found if n.lineno <= line <= (n.end_lineno or n.lineno)]
    if spanning:
        call = min(spanning, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
    elif len(found) == 1:
        call = found[0]
    else:
        return None
    scope = _Scope(tree, call)
    grid = _part(call, "grid", scope)
    # ``grid=grid``: the line that makes the grid holds its numbers (``grid = (M // BM, ...)``).
    made = scope.resolve(grid.value) if grid is not None else None
    scratch = _part(call, "scratch_shapes", scope)
    return CallLines(call.lineno, (made.lineno if made is not grid.value else grid.lineno) if grid is not None
                     else None, _semantics_line(call, scope),
                     _maps(call, "in_specs", scope), _maps(call, "out_specs", scope),
                     scratch.lineno if scratch is not None else None)


def divisor(statement: str) -> tuple[str, str] | None:
    """The divisor of the one division in a quoted statement, as written, and the
    name of the ref or variable it reads: ``o_ref[0] = (acc_ref[...] / l_ref[...])``
    gives ("l_ref[...]", "l_ref"); None for none or several."""
    tree = parse(statement.strip())
    if tree is None:
        return None
    divs = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]
    if len(divs) != 1:
        return None
    right = divs[0].right
    base = right.value if isinstance(right, ast.Subscript) else right
    if not isinstance(base, ast.Name):
        return None
    return ast.get_source_segment(statement.strip(), right) or base.id, base.id


def store_lines(tree: ast.Module, name: str) -> list[int]:
    """The module's lines that store into ``name[...]`` (``=`` or an augmented ``+=``), in order."""
    return sorted({t.lineno for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign))
                   for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                   if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name})


def first_step(decorator: ast.expr) -> bool:
    """``@pl.when(<something> == 0)``: a block that runs at a first step only."""
    if not isinstance(decorator, ast.Call) or not decorator.args:
        return False
    name = decorator.func.attr if isinstance(decorator.func, ast.Attribute) else getattr(decorator.func, "id", "")
    test = decorator.args[0]
    return name == "when" and isinstance(test, ast.Compare) and len(test.ops) == 1 \
        and isinstance(test.ops[0], ast.Eq) and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value == 0
