"""Near-duplicate pairs in a class: every pair of submissions whose canonical
programs score at least a threshold, without scoring every pair.

The score of two programs is the Jaccard similarity of their pieces
(``grading.likeness``: each live equation with what feeds it, runs of data
flow, what each sub-program returns; names, source lines, numbers and dtypes
set aside, unused equations dropped, independent equations in any order),
without the pieces more than half of the class has (``common``): on a small
assignment most independent solutions share most of their pieces, and two
different bugs in the one obvious kernel would otherwise score near 1.

Submissions with the same program (the same pieces and the same canonical
listing) are grouped first: a class where 300 students wrote the one obvious
kernel costs one signature for them, and one row on the page, not 45,000
pairs. Each distinct program gets a MinHash signature (datasketch), and a
locality-sensitive hash index makes the candidates: its bands are as long as
they can be while a pair scoring exactly the threshold is still missed with a
probability below ``MISS`` (a pair scoring more, less often still). Every
candidate is then scored exactly: a listed score is never an estimate, and a
class of 1,000 distinct programs costs the candidates' comparisons, not
half a million.
"""
from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from itertools import combinations

from ..grading.identity.likeness import Likeness, jaccard

DEFAULT_THRESHOLD = 0.8
COMMON = 0.5            # a piece more than this share of the class has is set aside (``common``)
MIN_CLASS = 5           # submissions with programs a class needs before anything counts as common
NUM_PERM = 256          # MinHash permutations: the signature's length
MISS = 1e-4             # the most likely a pair scoring the threshold is to be left out of the candidates
MAX_INLINE = 400        # longer changed lines are highlighted whole, not character by character
ALIKE = 0.5             # two lines in one changed block shown as one changed line (else one removed, one added)


@dataclass(frozen=True)
class Program:
    """One canonical program and the submissions that have it."""
    ids: tuple[str, ...]
    likeness: Likeness


@dataclass(frozen=True)
class Pair:
    """Two different programs (indices into ``Similar.programs``, a < b) and their score."""
    a: int
    b: int
    score: float
    shared: int             # pieces both have
    only_a: int
    only_b: int


@dataclass(frozen=True)
class Similar:
    threshold: float
    programs: tuple[Program, ...]
    pairs: tuple[Pair, ...]             # best first
    scored: int                         # candidate pairs scored exactly
    common: int = 0                     # pieces set aside: more than half the class has them

    def submission_pairs(self) -> dict[tuple[str, str], float]:
        """Every pair of submissions at or above the threshold (ids in order), with its score:
        two submissions with one program score 1."""
        out = {}
        for p in self.programs:
            for a, b in combinations(sorted(p.ids), 2):
                out[(a, b)] = 1.0
        for pair in self.pairs:
            for a in self.programs[pair.a].ids:
                for b in self.programs[pair.b].ids:
                    out[tuple(sorted((a, b)))] = pair.score
        return out


def group(likenesses: dict[str, Likeness]) -> tuple[Program, ...]:
    """Submissions with one program together (in the order first seen)."""
    by: dict[tuple, list[str]] = {}
    for sid, like in likenesses.items():
        by.setdefault((like.shingles, like.listing), []).append(sid)
    return tuple(Program(tuple(ids), likenesses[ids[0]]) for ids in by.values())


def bands(threshold: float) -> tuple[int, int]:
    """The index's (bands, rows per band): the longest bands that leave a pair
    scoring ``threshold`` out with a probability below ``MISS``. Two signatures
    share a band of r rows with probability s**r, so a pair scoring s is a
    candidate unless every one of the b bands differs: (1 - s**r)**b."""
    for rows in range(NUM_PERM, 0, -1):
        if (1 - threshold ** rows) ** (NUM_PERM // rows) < MISS:
            return NUM_PERM // rows, rows
    return NUM_PERM, 1


def candidates(sets: list[frozenset[str]], threshold: float) -> set[tuple[int, int]]:
    """Pairs (i < j) whose MinHash signatures share a band of the LSH index."""
    from datasketch import MinHash, MinHashLSH
    index = MinHashLSH(num_perm=NUM_PERM, params=bands(threshold))
    signatures = MinHash.bulk([[s.encode() for s in sorted(x)] for x in sets], num_perm=NUM_PERM)
    for i, sig in enumerate(signatures):
        if sets[i]:
            index.insert(str(i), sig)
    found = set()
    for i, sig in enumerate(signatures):
        if sets[i]:
            found.update((min(i, int(j)), max(i, int(j))) for j in index.query(sig) if int(j) != i)
    return found


def common(likenesses: dict[str, Likeness]) -> frozenset[str]:
    """The pieces more than half of the class's submissions have (``COMMON``): what
    independent students share (the starter's structure, the design the lecture
    shows, the one obvious kernel), set aside before two programs are compared,
    as MOSS sets aside a base file. A class of fewer than ``MIN_CLASS`` sets
    nothing aside: it cannot say what is common."""
    if len(likenesses) < MIN_CLASS:
        return frozenset()
    df = Counter(s for like in likenesses.values() for s in like.shingles)
    return frozenset(s for s, n in df.items() if n > COMMON * len(likenesses))


def find(likenesses: dict[str, Likeness], threshold: float = DEFAULT_THRESHOLD, exact: bool = False) -> Similar:
    """The pairs of different programs scoring at least ``threshold`` (``exact``:
    every pair scored, no index; for checking the index), on the pieces the class
    does not share (``common``)."""
    programs = group(likenesses)
    base = common(likenesses)
    sets = [p.likeness.shingles - base for p in programs]
    todo = set(combinations(range(len(sets)), 2)) if exact else candidates(sets, threshold)
    pairs = []
    for i, j in todo:
        score = jaccard(sets[i], sets[j])
        if score >= threshold:
            shared = len(sets[i] & sets[j])
            pairs.append(Pair(i, j, score, shared, len(sets[i]) - shared, len(sets[j]) - shared))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return Similar(threshold, programs, tuple(pairs), len(todo), len(base))


@dataclass(frozen=True)
class Side:
    number: int                                     # the line's number in its listing
    parts: tuple[tuple[str, bool], ...]             # the line's text in pieces, True where it differs


@dataclass(frozen=True)
class DiffRow:
    kind: str                # "same", "changed", "only-a", "only-b"
    a: Side | None
    b: Side | None


def side_by_side(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[DiffRow, ...]:
    """Two listings aligned line by line (difflib), what differs marked down to
    the character. Lines are matched on their text without the indentation: a
    program one call deeper on one side (a ``jax.jit`` around it) still lines up."""
    rows: list[DiffRow] = []
    ka, kb = [x.strip() for x in a], [x.strip() for x in b]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if op == "equal":
            rows += [DiffRow("same", Side(i + 1, ((a[i], False),)), Side(j + 1, ((b[j], False),)))
                     for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            left, right = (a[i] if i < i2 else None), (b[j] if j < j2 else None)
            alike = left is not None and right is not None and \
                difflib.SequenceMatcher(None, ka[i], kb[j], autojunk=False).ratio() >= ALIKE
            if alike:
                pa, pb = _marked(left, right)
                rows.append(DiffRow("changed", Side(i + 1, pa), Side(j + 1, pb)))
                continue
            if left is not None:
                rows.append(DiffRow("only-a", Side(i + 1, ((left, True),)), None))
            if right is not None:
                rows.append(DiffRow("only-b", None, Side(j + 1, ((right, True),))))
    return tuple(rows)


def _marked(a: str, b: str) -> tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]:
    """Two changed lines in pieces, the characters that differ marked (the indentation never)."""
    ia, ib = a[:len(a) - len(a.lstrip())], b[:len(b) - len(b.lstrip())]
    ta, tb = a[len(ia):], b[len(ib):]
    if len(ta) > MAX_INLINE or len(tb) > MAX_INLINE:
        return ((ia, False), (ta, True)), ((ib, False), (tb, True))
    pa: list[tuple[str, bool]] = [(ia, False)] if ia else []
    pb: list[tuple[str, bool]] = [(ib, False)] if ib else []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if ta[i1:i2]:
            pa.append((ta[i1:i2], op != "equal"))
        if tb[j1:j2]:
            pb.append((tb[j1:j2], op != "equal"))
    return tuple(pa), tuple(pb)
