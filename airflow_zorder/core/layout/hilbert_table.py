"""Skilling's Hilbert index as a finite-state machine over Z-order keys: a few table lookups per key.

Skilling's transpose (``curves.hilbert_keys``) walks the levels of the coordinates from the
top bit down. At each level it reads the d coordinate bits there, as transformed by the
levels above, and from them (a) emits the level's d index bits and (b) transforms every
lower level by inverting and swapping coordinates. The transforms compose to a signed
permutation of the coordinates, and the Gray step's trailing XOR to one parity bit; those
two are the state, and the machine reads the levels' bits in exactly the order a Z-order key
holds them. So a Hilbert key is a Z-order key run through a table, ``k`` levels per lookup:
for 3 columns of 10 bits, 5 lookups instead of 36 dependent bit steps. Reachable states grow
as d! * 2^d (8, 48, 384 for d = 2, 3, 4), so :func:`build` returns None beyond a table size.

Table entries are ``next_state << 32 | output bits``; the state index is the entry's high word.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: largest table (entries) worth a literal in the key expressions: 8,192 longs = 64 KiB
MAX_ENTRIES = 1 << 13

_State = tuple[tuple[int, ...], tuple[int, ...], int]


def _level(state: _State, raw: int, d: int) -> tuple[_State, int]:
    """One level of Skilling's AxestoTranspose + Gray code: (state, raw d bits) -> (next state, d index bits).

    ``raw`` holds column 0's bit highest. The state maps raw bits to transformed ones
    (``v[i] = raw[perm[i]] ^ flip[i]``) and carries the parity that the Gray step's final XOR
    applies to every lower level.
    """
    perm, flip, parity = list(state[0]), list(state[1]), state[2]
    v = [((raw >> (d - 1 - perm[i])) & 1) ^ flip[i] for i in range(d)]
    for i in range(d):  # Skilling: bit set -> invert x0's lower bits, else exchange x0's and xi's lower bits
        if v[i]:
            flip[0] ^= 1
        else:
            perm[0], perm[i] = perm[i], perm[0]
            flip[0], flip[i] = flip[i], flip[0]
    out, gray = 0, 0
    for i in range(d):
        gray ^= v[i]
        out |= (gray ^ parity) << (d - 1 - i)
    return (tuple(perm), tuple(flip), parity ^ gray), out


def _machine(d: int, limit: int) -> list[list[tuple[int, int]]] | None:
    """Transitions ``[state][raw] -> (next state, output)`` of the states reachable from the start; None past ``limit`` states."""
    start: _State = (tuple(range(d)), (0,) * d, 0)
    index, order, rows = {start: 0}, [start], []
    while len(rows) < len(order):
        row = []
        for raw in range(1 << d):
            nxt, out = _level(order[len(rows)], raw, d)
            if nxt not in index:
                if len(order) >= limit:
                    return None
                index[nxt] = len(order)
                order.append(nxt)
            row.append((index[nxt], out))
        rows.append(row)
    return rows


@dataclass(frozen=True)
class HilbertTable:
    """Lookup tables for ``d`` columns of ``bits`` bits: the top ``first_levels`` levels, then ``levels`` per step."""

    d: int
    bits: int
    levels: int
    first_levels: int
    first: np.ndarray  # int64 entries indexed by the top first_levels * d key bits (from the start state)
    table: np.ndarray  # int64 entries indexed by state << (levels * d) | next levels * d key bits

    def shifts(self) -> list[int]:
        """Right shift of the Z-order key for each lookup, top first (the first lookup uses ``first``)."""
        out, remaining = [], self.bits - self.first_levels
        out.append(remaining * self.d)
        while remaining:
            remaining -= self.levels
            out.append(remaining * self.d)
        return out


def _compose(rows: list[list[tuple[int, int]]], d: int, levels: int, states: range) -> np.ndarray:
    """Entries for ``levels`` levels per lookup from each of ``states``: state << (levels*d) | chunk."""
    width = levels * d
    out = np.zeros(len(states) << width, dtype=np.int64)
    for si, s in enumerate(states):
        for chunk in range(1 << width):
            state, bits = s, 0
            for lv in range(levels):
                state, o = rows[state][(chunk >> (d * (levels - 1 - lv))) & ((1 << d) - 1)]
                bits = (bits << d) | o
            out[(si << width) | chunk] = (state << 32) | bits
    return out


def build(d: int, bits: int, max_entries: int = MAX_ENTRIES) -> HilbertTable | None:
    """Tables for Hilbert keys of ``d`` >= 2 columns of ``bits`` bits, or None when they would exceed ``max_entries``."""
    if d < 2 or bits < 1 or (1 << d) > max_entries:
        return None
    rows = _machine(d, max_entries >> d)
    if rows is None:
        return None
    n = len(rows)
    levels = 1
    while levels < bits and n << ((levels + 1) * d) <= max_entries:
        levels += 1
    first_levels = bits - levels * ((bits - 1) // levels)  # 1..levels: the rest divides into full steps
    return HilbertTable(
        d,
        bits,
        levels,
        first_levels,
        first=_compose(rows, d, first_levels, range(1)),
        table=_compose(rows, d, levels, range(n)),
    )


def hilbert_from_z(z: np.ndarray, t: HilbertTable) -> np.ndarray:
    """Hilbert keys (uint64, the ``d * bits`` low bits) from Z-order keys of the same range ids."""
    z = np.asarray(z, dtype=np.uint64)
    shifts = t.shifts()
    entry = t.first[((z >> np.uint64(shifts[0])) & np.uint64((1 << (t.first_levels * t.d)) - 1)).astype(np.int64)]
    low, width = np.int64(0xFFFFFFFF), t.levels * t.d
    out = (entry & low).astype(np.uint64) << np.uint64(shifts[0])
    for shift in shifts[1:]:
        chunk = ((z >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)
        entry = t.table[((entry >> 32) << width) | chunk]
        out |= (entry & low).astype(np.uint64) << np.uint64(shift)
    return out
