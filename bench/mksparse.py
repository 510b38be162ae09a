#!/usr/bin/env python3
"""Create the deterministic sparse source file of the `sparsefile` workload.

Usage: mksparse.py PATH SIZE_MIB [SEED]

The file is SIZE_MIB MiB long (a multiple of 8).  It is cut into 8 MiB chunks;
each chunk holds 3 MiB of pseudo-random data (so 3/8 of the file, 768 MiB of a
2 GiB file), split into 1 to 3 runs at 64 KiB-aligned offsets, with holes
(never written, so unallocated on the file system) between and around them.
The same SEED always gives the same bytes and the same layout.
"""
import os
import random
import sys

UNIT = 64 * 1024          # alignment of runs and holes
CHUNK_UNITS = 128         # 8 MiB chunks
DATA_UNITS = 48           # 3 MiB of data per chunk


def split(rng, total, parts, minimum):
    """Split `total` units into `parts` pieces, each at least `minimum`."""
    spare = total - parts * minimum
    cuts = sorted(rng.randint(0, spare) for _ in range(parts - 1))
    bounds = [0] + cuts + [spare]
    return [minimum + bounds[i + 1] - bounds[i] for i in range(parts)]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    path, size_mib = sys.argv[1], int(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) == 4 else 1
    if size_mib <= 0 or size_mib % 8:
        sys.exit("mksparse.py: SIZE_MIB must be a positive multiple of 8")
    chunks = size_mib // 8
    rng = random.Random(seed)
    data_bytes = 0
    runs = 0
    with open(path, "wb") as f:
        for chunk in range(chunks):
            nruns = rng.randint(1, 3)
            data = split(rng, DATA_UNITS, nruns, 1)
            # Holes: one before, one after, and one (non-empty) between runs.
            holes_total = CHUNK_UNITS - DATA_UNITS
            inner = split(rng, holes_total, nruns + 1, 0)
            for i in range(1, nruns):
                if inner[i] == 0:       # keep runs apart by at least one unit
                    j = max(range(nruns + 1), key=lambda k: inner[k])
                    inner[j] -= 1
                    inner[i] += 1
            pos = chunk * CHUNK_UNITS
            for i in range(nruns):
                pos += inner[i]
                f.seek(pos * UNIT)
                f.write(rng.randbytes(data[i] * UNIT))
                data_bytes += data[i] * UNIT
                runs += 1
                pos += data[i]
        f.truncate(size_mib * 1024 * 1024)
    print(f"mksparse: {path}: {size_mib} MiB, {data_bytes >> 20} MiB of data "
          f"in {runs} runs (seed {seed})")


if __name__ == "__main__":
    main()
