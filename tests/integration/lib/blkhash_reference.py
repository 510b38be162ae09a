#!/usr/bin/env python3
"""Independent blkhash reference for the tests: reads a raw image file and
prints H(H(block_0) || ... || H(block_n-1) || LE64(length)) in hex.

Usage: blkhash_reference.py FILE [ALGO [BLOCK_SIZE]]
"""
import hashlib
import struct
import sys


def blkhash(path, algorithm="sha256", block_size=65536):
    outer = hashlib.new(algorithm)
    length = 0
    with open(path, "rb") as image:
        while True:
            block = image.read(block_size)
            if not block:
                break
            length += len(block)
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
