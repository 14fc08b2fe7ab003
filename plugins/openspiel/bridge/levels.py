#!/usr/bin/env python3
"""Measures the built-in search opponents' levels against each other: each
level plays the one below it, the seats alternating, with the bridge's own
bots (`openspiel_bridge.Match`, both seats bots), so what is measured is
what an agent meets. Each seed is played twice with the seats swapped
(duplicate play), which takes much of the cards' luck out of poker.

    ~/.cache/ludus/openspiel-venv/bin/python levels.py [--games N] [--jobs J] [--search mcts|ismcts]

Prints a Markdown table: per pairing, the higher level's score (a win 1, a
draw 0.5) with its 95 % Wilson interval in games with a winner, or its mean
return with a 95 % interval in poker, and the seconds a game took.
"""

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import openspiel_bridge as bridge

# (search, game, pairings): the game each search is measured on.
MEASURED = (
    ("mcts", "connect_four", ((2, 1), (3, 2), (4, 3), (5, 4))),
    ("ismcts", "leduc_poker", ((2, 1), (3, 2), (4, 3), (5, 4))),
)


def play(task):
    """One game of `high` against `low`; the high level's return and the time."""
    search, game, high, low, n = task
    import pyspiel

    seats = [f"{search}:{high}", f"{search}:{low}"]
    if n % 2:
        seats.reverse()
    t = time.perf_counter()
    # Duplicate: each seed is played twice, the levels' seats swapped, so
    # the cards dealt weigh less in the difference.
    match = bridge.Match(pyspiel, {"game": game, "seats": seats, "seed": 1000 + n // 2})
    match.advance()
    returns = match.returns()
    return returns[seats.index(f"{search}:{high}")], time.perf_counter() - t


def wilson(score, n, z=1.96):
    p = score / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--games", type=int, default=40, help="games per pairing (half with each seat)")
    args.add_argument("--jobs", type=int, default=2)
    args.add_argument("--search", choices=("mcts", "ismcts"), help="only this search")
    args.add_argument("--pair", help="only this pairing, as HIGH:LOW (2:1)")
    a = args.parse_args()
    only = tuple(int(x) for x in a.pair.split(":")) if a.pair else None
    print("| search, game | levels | games | the higher level's score (95 % interval) | seconds a game |")
    print("|---|---|---|---|---|")
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        for search, game, pairings in MEASURED:
            if a.search and search != a.search:
                continue
            for high, low in pairings:
                if only and (high, low) != only:
                    continue
                tasks = [(search, game, high, low, n) for n in range(a.games)]
                results = list(pool.map(play, tasks))
                returns = [r for r, _ in results]
                took = sum(t for _, t in results) / len(results)
                if game == "connect_four":
                    score = sum(1.0 if r > 0 else 0.5 if r == 0 else 0.0 for r in returns)
                    lo, hi = wilson(score, len(returns))
                    shown = f"{100 * score / len(returns):.1f} % ({100 * lo:.1f}–{100 * hi:.1f} %)"
                else:
                    mean = sum(returns) / len(returns)
                    sd = math.sqrt(sum((r - mean) ** 2 for r in returns) / max(1, len(returns) - 1))
                    half = 1.96 * sd / math.sqrt(len(returns))
                    shown = f"{mean:+.2f} a hand ({mean - half:+.2f} to {mean + half:+.2f})"
                print(f"| {search}, {game} | {high} against {low} | {len(returns)} | {shown} | {took:.2f} |", flush=True)


if __name__ == "__main__":
    main()
