#!/usr/bin/env python3
"""Benchmarks of the phase bridge, through its MCP surface (one bridge process,
JSON-RPC lines on a pipe, as the Ludus plugin drives it):

- decisions per second when a random agent plays phase-ai;
- games per minute of phase-ai against itself (both seats `ai`: `new_game` runs
  the whole game);
- phase-ai's win rate against a random agent over N seeded games, with a
  Wilson 95 % interval;
- with `--levels`: every AI level against a random agent, and levels against
  each other (seats alternating), N seeded games each, as a table.

    python3 plugins/cards/bridge/bench.py [--games 100] [--level Medium]
    python3 plugins/cards/bridge/bench.py --levels [--games 100]
    python3 plugins/cards/bridge/bench.py --card-data 30000

Uses the venv the bridge installs on first use. Nothing here is asserted.
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

BRIDGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "phase_bridge.py")


class Bridge:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, BRIDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.n = 0

    def call(self, name, args=None, seat=0):
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
               "params": {"name": name, "arguments": args or {}, "_meta": {"seat": seat}}}
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        r = json.loads(self.p.stdout.readline())["result"]
        if r["isError"]:
            raise RuntimeError(r["content"][0]["text"])
        return r["structuredContent"]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def random_agent_game(seed, level):
    """One game of a random agent (seat 0) against phase-ai; (winner, decisions, calls, seconds)."""
    b = Bridge()
    rng = random.Random(seed)
    t0 = time.perf_counter()
    b.call("new_game", {"seed": seed, "seats": ["agent", "ai"], "ai_level": level})
    decisions = 0
    while True:
        st = b.call("pass_priority", {"timeout_ms": 1000})
        if st["game_over"]:
            break
        c = b.call("get_action_choices")
        rt, n = c.get("response_type"), len(c.get("choices", []))
        if rt == "boolean":
            a = {"answer": rng.random() < 0.1}
        elif rt == "amount":
            a = {"amount": rng.randint(c["min"], c["max"])}
        elif n and (rt == "index" or rng.random() < 0.7):
            a = {"index": rng.randrange(n)}
        else:
            a = {"answer": False}
        try:
            b.call("choose_action", a)
        except RuntimeError:
            b.call("take_action")
        decisions += 1
    seconds = time.perf_counter() - t0
    calls = b.n
    b.close()
    return st["winner"], decisions, calls, seconds


def ai_vs_ai(seed, level, other=None):
    b = Bridge()
    t0 = time.perf_counter()
    st = b.call("new_game", {"seed": seed, "seats": ["ai", "ai"], "ai_levels": [level, other or level]})
    seconds = time.perf_counter() - t0
    b.close()
    return st["winner"], seconds


def wilson(wins, n, z=1.96):
    if n == 0:
        return (0.0, 0.0)
    p = wins / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (c - h, c + h)


LEVELS = ("VeryEasy", "Easy", "Medium", "Hard", "VeryHard")


def card_data_scale(n):
    """Card data of `n` cards (the bundled real cards copied under numbered
    names: MTGJSON's full file is not obtainable here): the time and peak
    memory of indexing it, and of a game started on it."""
    import resource
    import tempfile

    here = os.path.dirname(BRIDGE)
    with open(os.path.join(here, "cards.json"), encoding="utf-8") as f:
        real = json.load(f)["data"]
    data, names = {}, sorted(real)
    for i in range(n):
        name = names[i % len(names)]
        faces = real[name] if i < len(names) else [dict(real[name][0], name=f"{name} {i}")]
        data[faces[0]["name"]] = faces
    work = tempfile.mkdtemp()
    path = os.path.join(work, "AtomicCards.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"meta": {}, "data": data}, f)
    env = dict(os.environ, XDG_CACHE_HOME=work)

    def child(code):
        """Seconds and peak memory (MB) of `code` in a fresh process."""
        t0 = time.perf_counter()
        code += "; import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
        out = subprocess.run([sys.executable, "-c", code], cwd=here, env=env, check=True, stderr=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, text=True).stdout
        return time.perf_counter() - t0, int(out.split()[-1]) / 1024

    index_s, index_mb = child(f"import card_data; card_data.CardData({path!r})")
    game = (f"import phase_bridge as pb; b = pb.Bridge(); pb.Table(b.cards({path!r}), b.decks, "
            "{'seats': ['agent', 'ai'], 'seed': 1, 'decks': ['burn', 'azorius-control']})")
    bundled = game.replace(repr(path), "None")
    child(bundled)  # the first indexes the bundled file
    bundled_s, bundled_mb = child(bundled)
    game_s, game_mb = child(game)
    index_dir = os.path.join(work, "ludus", "cards")
    index_size = max(os.path.getsize(os.path.join(index_dir, f)) for f in os.listdir(index_dir) if f.endswith(".sqlite"))
    print("| measurement | result |\n|---|---|")
    print(f"| card data file | {n} cards, {os.path.getsize(path) / 1e6:.1f} MB of AtomicCards JSON |")
    print(f"| indexing it, once per file (a fresh process) | {index_s:.1f} s, peak memory {index_mb:.0f} MB, index {index_size / 1e6:.1f} MB |")
    print(f"| a game's start on the bundled 56 cards (a fresh process) | {bundled_s:.2f} s, peak memory {bundled_mb:.0f} MB |")
    print(f"| a game's start on it: open the index, read two 60-card decks, build the engine, mulligan (a fresh process) | {game_s:.2f} s, peak memory {game_mb:.0f} MB |")



def levels_table(games):
    """Each level against a random agent, and pairs of levels (the first
    level's seat alternating), `games` seeded games each."""
    print("| phase-ai | opponent | games | its wins | win rate (95 % interval) |\n|---|---|---|---|---|")
    for level in LEVELS:
        wins = sum(random_agent_game(seed, level)[0] == 1 for seed in range(games))
        lo, hi = wilson(wins, games)
        print(f"| {level} | random agent | {games} | {wins} | {100 * wins / games:.0f} % ({100 * lo:.0f}–{100 * hi:.0f} %) |", flush=True)
    for first, second in (("VeryEasy", "Medium"), ("Medium", "VeryHard"), ("VeryEasy", "VeryHard")):
        wins = 0
        for seed in range(games):
            seat = seed % 2
            levels = [first, second] if seat == 0 else [second, first]
            wins += ai_vs_ai(2000 + seed, *levels)[0] == seat
        lo, hi = wilson(wins, games)
        print(f"| {first} | {second} | {games} | {wins} | {100 * wins / games:.0f} % ({100 * lo:.0f}–{100 * hi:.0f} %) |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--level", default="Medium")
    ap.add_argument("--levels", action="store_true", help="the table of levels")
    ap.add_argument("--card-data", type=int, default=0, help="measure card data of this many cards")
    a = ap.parse_args()
    if a.levels:
        return levels_table(a.games)
    if a.card_data:
        return card_data_scale(a.card_data)

    ai_wins, decisions, calls, secs = 0, 0, 0, 0.0
    for seed in range(a.games):
        winner, d, c, s = random_agent_game(seed, a.level)
        ai_wins += winner == 1
        decisions, calls, secs = decisions + d, calls + c, secs + s
    lo, hi = wilson(ai_wins, a.games)
    ai_games = max(10, a.games // 5)
    ai_secs = sum(ai_vs_ai(1000 + s, a.level)[1] for s in range(ai_games))

    print("| measurement | result |\n|---|---|")
    print(f"| phase-ai ({a.level}) vs a random agent, {a.games} seeded games | {ai_wins} wins, {100 * ai_wins / a.games:.1f} % (95 % {100 * lo:.1f}–{100 * hi:.1f} %) |")
    print(f"| agent decisions per second through the bridge (random agent, AI turns included) | {decisions / secs:.0f} ({decisions} decisions, {calls} tool calls in {secs:.1f} s) |")
    print(f"| mean bridge tool call, agent side (AI thinking included) | {1000 * secs / calls:.2f} ms |")
    print(f"| games per minute, phase-ai vs phase-ai ({ai_games} games, one core) | {60 * ai_games / ai_secs:.1f} |")


if __name__ == "__main__":
    main()
