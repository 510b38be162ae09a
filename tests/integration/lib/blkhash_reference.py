#!/usr/bin/env python3
"""Independent blkhash reference for the tests: reads a raw image file and
prints H(H(block_0) || ... || H(block_n-1) || LE64(length)) in hex.

Usage: blkhash_reference.py FILE [ALGO [BLOCK_SIZE]]
"""
import hashlib
import struct
import sys

# Read this much at a time (a whole number of blocks, at least one): 4 KiB
# reads cost a system call and a fresh buffer each, several times the
# hashing itself on the sparse test images.
CHUNK = 1 << 20


def blkhash(path, algorithm="sha256", block_size=65536):
    outer = hashlib.new(algorithm)
    # A full all-zero block's digest, hashed here once: the same bytes
    # give the same digest, so comparing is cheaper than hashing again.
    zero = bytes(block_size)
    zero_digest = hashlib.new(algorithm, zero).digest()
    chunk_size = max(block_size, CHUNK // block_size * block_size)
    zero_chunk = bytes(chunk_size)
    length = 0
    with open(path, "rb") as image:
        while True:
            chunk = image.read(chunk_size)
            if not chunk:
                break
            length += len(chunk)
            if chunk == zero_chunk:
                outer.update(zero_digest * (chunk_size // block_size))
                continue
            for offset in range(0, len(chunk), block_size):
                block = chunk[offset:offset + block_size]
                if block == zero:
                    outer.update(zero_digest)
                else:
                    outer.update(hashlib.new(algorithm, block).digest())
    outer.update(struct.pack("<Q", length))
    return outer.hexdigest()


if __name__ == "__main__":
    args = sys.argv[1:]
    if not 1 <= len(args) <= 3:
        sys.exit(__doc__)
    algorithm = args[1] if len(args) > 1 else "sha256"
    block_size = int(args[2]) if len(args) > 2 else 65536
    print(blkhash(args[0], algorithm, block_size))
