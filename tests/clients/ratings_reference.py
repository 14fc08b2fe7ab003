#!/usr/bin/env python3
"""Bradley-Terry ratings of the players in a records file, fitted by choix
(PyPI, MIT), to check `ludus report`'s own fit (tests/records.rs).

usage: ratings_reference.py RECORDS.jsonl GAME
stdout: {"player": elo, ...}, on the Elo scale with mean 1500.

Each record's seats give its players and results; every two seats with
different players and a result each met once (won > draw > lost), as the
report counts them. choix takes only whole wins, so every game enters twice:
a win as two wins, a draw as one win each way. That doubles the report's
log-likelihood (draws as halves) exactly, so with choix's penalty
alpha = 1/4 (the report's Gaussian prior of variance 4 on each strength, in
natural-log units, doubled with the data) both maximise the same posterior.
"""
import json
import math
import sys

import choix

PRIOR_VAR = 4.0  # the report's prior (host/src/report/ratings.rs)
RANK = {"won": 2, "solved": 2, "draw": 1, "lost": 0, "failed": 0}


def main():
    path, game = sys.argv[1], sys.argv[2]
    names, pairs = {}, []

    def index(name):
        return names.setdefault(name, len(names))

    for line in open(path):
        record = json.loads(line)
        if record.get("game") != game or record.get("replay"):
            continue
        seats = [
            (s["player"], RANK[s["result"]])
            for s in record.get("seats", [])
            if s.get("player") and s.get("result") in RANK
        ]
        for i, (p, rp) in enumerate(seats):
            for q, rq in seats[i + 1 :]:
                if p == q:
                    continue
                a, b = index(p), index(q)
                if rp > rq:
                    pairs += [(a, b), (a, b)]
                elif rp < rq:
                    pairs += [(b, a), (b, a)]
                else:
                    pairs += [(a, b), (b, a)]
    theta = choix.opt_pairwise(len(names), pairs, alpha=1.0 / PRIOR_VAR, method="Newton-CG", tol=1e-12)
    elo = theta * 400.0 / math.log(10.0)
    elo += 1500.0 - elo.mean()
    json.dump({name: float(elo[i]) for name, i in names.items()}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
