#!/usr/bin/env python3
"""moe's training batch stream (lib/data/batch_generator.cpp) in Python, for peers that must train on the
very batches moe-train trains on (scripts/bench_cpu_torch.py): the same length filter, window size, seeded
Fisher-Yates shuffles on std::mt19937_64 (written out here: Python's random is the 32-bit generator), the
same packing (sentences x (longest + 1) <= max tokens on each side) and the same order of batches, epoch
after epoch. Without it the two sides of a speed comparison train on different samples of batches, whose
padding differs by 10% or more over 20 updates.

    python3 scripts/moe_batches.py --src train.src.ids --tgt train.tgt.ids [--max-tokens 4000] [--seed 1]
        [--max-len 256] [--count 20]

prints the real target tokens (sentences' lengths + 1, as moe-train's metrics count them) of the first
--count batches, one per line. The ids files come from `moe-vocab encode`. Covered by
tests/scripts/bench_batches.sh (against moe-train's logged tokens per update).
"""
import argparse

M64 = (1 << 64) - 1


def mix(x):
    """splitmix64's finaliser, as batch_generator.cpp's mix()."""
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


class MT19937_64:
    """std::mt19937_64: n 312, m 156, the standard's tempering."""

    def __init__(self, seed):
        self.mt = [seed & M64]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & M64)
        self.i = 312

    def _twist(self):
        mt = self.mt
        for i in range(312):
            x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
            mt[i] = mt[(i + 156) % 312] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
        self.i = 0

    def __call__(self):
        if self.i >= 312:
            self._twist()
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & M64


def shuffle(v, rng):
    for i in range(len(v), 1, -1):
        j = rng() % i
        v[i - 1], v[j] = v[j], v[i - 1]


def moe_batches(src, tgt, max_tokens, seed, max_len=256, max_ratio=0.0):
    """Yields moe-train's batches, lists of sentence indices into src/tgt (token id lists), forever."""
    kept, total = [], 0.0
    for i, (s, t) in enumerate(zip(src, tgt)):
        ls, lt = len(s), len(t)
        if ls == 0 or lt == 0 or ls > max_len or lt > max_len or ls + 1 > max_tokens or lt + 1 > max_tokens:
            continue
        if max_ratio > 0 and max(ls / lt, lt / ls) > max_ratio:
            continue
        kept.append(i)
        total += max(ls, lt) + 1
    window = max(1, int(100.0 * max_tokens / (total / len(kept))))
    epoch = 0
    while True:
        order = list(kept)
        shuffle(order, MT19937_64(mix(seed ^ mix(epoch))))
        for w in range((len(order) + window - 1) // window):
            ids = sorted(order[w * window:(w + 1) * window], key=lambda i: (len(src[i]), len(tgt[i])))
            batches, cur, ms, mt = [], [], 0, 0
            for i in ids:
                ns, nt = max(ms, len(src[i]) + 1), max(mt, len(tgt[i]) + 1)
                if cur and ((len(cur) + 1) * ns > max_tokens or (len(cur) + 1) * nt > max_tokens):
                    batches.append(cur)
                    cur, ms, mt = [], len(src[i]) + 1, len(tgt[i]) + 1
                else:
                    ms, mt = ns, nt
                cur.append(i)
            if cur:
                batches.append(cur)
            shuffle(batches, MT19937_64(mix(seed ^ mix((epoch * 0x100000001B3 + w + 1) & M64))))
            yield from batches
        epoch += 1


def read_ids(path):
    with open(path) as f:
        return [[int(x) for x in line.split()] for line in f]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--count", type=int, default=20)
    a = p.parse_args()
    src, tgt = read_ids(a.src), read_ids(a.tgt)
    stream = moe_batches(src, tgt, a.max_tokens, a.seed, a.max_len)
    for _ in range(a.count):
        print(sum(len(tgt[i]) + 1 for i in next(stream)))


if __name__ == "__main__":
    main()
