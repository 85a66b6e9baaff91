#!/usr/bin/env python3
"""Splits a callgrind dump's instructions into the allocator's and the rest.

    python3 bench/alloc_split.py DUMP  ->  "TOTAL ALLOCATOR ALLOCATIONS"

ALLOCATOR is the inclusive cost of every call into malloc, free, realloc
and the other entry points below, from code outside them; ALLOCATIONS is how
many of those calls asked for memory (free is not counted).

Why: glibc malloc's cost per call depends on the heap's history. The same
binary, doing the same calls, measured 175-183k instructions a call in one
gateway process and the next, all of the spread in _int_malloc and
malloc_consolidate (bench/DIARY.md). Without the allocator a row repeats to
~0.2 %, and the number of allocations does not move at all, so the ledger
gates on those two.
"""
import sys

ENTRY = {"malloc", "free", "realloc", "calloc", "posix_memalign", "aligned_alloc", "memalign"}
FREES = {"free"}


def split(path):
    total = alloc_cost = allocations = 0
    fn = cfn = None
    calls = None  # the count of the calls= line whose cost line comes next
    with open(path, encoding="utf-8", errors="replace") as dump:
        for line in dump:
            if calls is not None:
                if fn not in ENTRY and cfn in ENTRY:
                    alloc_cost += int(line.split()[1])
                    if cfn not in FREES:
                        allocations += calls
                calls = None
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line.startswith("cfn="):
                cfn = line[4:].strip()
            elif line.startswith("calls="):
                calls = int(line[6:].split()[0])
            elif line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
    return total, alloc_cost, allocations


if __name__ == "__main__":
    print(*split(sys.argv[1]))
