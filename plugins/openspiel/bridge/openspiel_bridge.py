#!/usr/bin/env python3
"""One OpenSpiel game for the Ludus `openspiel` plugin.

JSON lines on stdin and stdout: each request `{"id": N, "op": ...}` gets one
answer `{"id": N, "ok": SNAPSHOT}` or `{"id": N, "error": TEXT}`; while the
engine installs on first use, `{"notice": TEXT}` lines say what takes long.

- `new`: `game`, `params` (a JSON object), `seats` (per seat: `agent`,
  `random`, `mcts:LEVEL`, `ismcts:LEVEL` or `cfr`), `seed` and `history` (the actions so far,
  chance outcomes included: a restart or another server rebuilds the game
  by applying them again).
- `move`: `seat` and `action` (the action's text for that seat, or its
  number).
- `forfeit`: `seat`.

After each request the game runs on by itself while it is chance's or a
built-in opponent's turn, so an answer always finds an agent to move or the
game over. Chance and the opponents draw from the game's whole seed and the
length of the history, never from a running generator: the same seed and
actions give the same game however often it was rebuilt.

The plugin owns the game (its history is what is kept); this process holds
the engine's state so that a move costs one `apply_action`. Every agent-
facing text comes from the snapshot: each seat's own observation, and the
whole history only where the game hides nothing or once it is over.

Stdout carries only protocol lines; diagnostics go to stderr.

Shared (`LUDUS_ENGINE_SHARED=1`): one process holds many games. Every line
in is `TAG REQUEST` for the game the host numbered TAG, and its answers go
out as `TAG ANSWER`; `-TAG` says the game is gone, and its state is freed.
A request that fails fails for its game only. Games are served by a few
worker threads, each game's requests in order: a slow search (MCTS releases
the interpreter lock while it thinks) holds up its own game, not the others.
"""

import json
import os
import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
# OpenSpiel, pinned: its game names, parameters and action texts are what the
# plugin's catalogue lists.
REQUIREMENT = "open_spiel==2.0.2"
# MCTS strength: simulations per move at levels 1 to 5.
MCTS_SIMULATIONS = (10, 100, 1000, 3000, 10000)
# IS-MCTS strength (OpenSpiel's Python IS-MCTS: each simulation samples a
# state the seat's information allows, so fewer of them a move).
ISMCTS_SIMULATIONS = (3, 30, 100, 300, 1000)
# CFR+ iterations for the equilibrium opponent (exploitability of the
# average policy: Kuhn 1e-4, Leduc 5e-3).
CFR_ITERATIONS = {"kuhn_poker": 1000, "leduc_poker": 200}


def log(msg):
    print(f"openspiel-bridge: {msg}", file=sys.stderr, flush=True)


# Worker threads of a shared process: games served at once. Few, as the
# engine's processes and threads are capped (`[engines] processes`).
WORKERS = 6
# The game whose request this thread handles, in a shared process: what is
# said meanwhile (a notice, the answer) is tagged with it.
CURRENT = threading.local()
# Equilibrium policies by game name, shared by every game of a process, and
# the action values they give (`Match.action_values`).
POLICIES = {}
VALUES = {}
POLICY_LOCK = threading.Lock()
OUT = threading.Lock()


def send(msg):
    text = json.dumps(msg, separators=(",", ":"))
    tag = getattr(CURRENT, "tag", None)
    with OUT:
        sys.stdout.write(text + "\n" if tag is None else f"{tag} {text}\n")
        sys.stdout.flush()


def notice(msg):
    log(msg)
    send({"notice": msg})


class Refusal(Exception):
    """A request the game refuses: said to the agent as it is."""


def load(pyspiel, name, params, seed):
    params = dict(params or {})
    if "rng_seed" in params:
        raise Refusal("rng_seed is the game's own (set from its seed); it is not a parameter")
    try:
        game = pyspiel.load_game(name, params)
        if game.get_type().chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
            # Chance is the game object's own generator: a fresh load per
            # match, seeded from the match's seed, replays the same game
            # from the same actions.
            game = pyspiel.load_game(name, {**params, "rng_seed": seed % 2**31})
    except pyspiel.SpielError as e:
        raise Refusal(f"OpenSpiel cannot load {name} with {json.dumps(params)}: {e}") from None
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        # Each player chooses in turn, seeing nothing of the others' choices.
        game = pyspiel.convert_to_turn_based(game)
    return game


class Match:
    def __init__(self, pyspiel, req):
        self.sp = pyspiel
        self.name = req["game"]
        self.seed = int(req.get("seed") or 0)
        self.game = load(pyspiel, self.name, req.get("params"), self.seed)
        kind = self.game.get_type()
        self.perfect = kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        self.has_obs = kind.provides_observation_string
        self.has_info = kind.provides_information_state_string
        self.seats = list(req["seats"])
        if len(self.seats) != self.game.num_players():
            raise Refusal(f"{self.name} has {self.game.num_players()} seats; {len(self.seats)} were given")
        self.state = self.game.new_initial_state()
        self.history = []
        # Every action as [player, text] (chance is -1), kept as they are
        # made; the plugin is sent only what it has not had.
        self.actions = []
        self.sent = 0
        self.forfeited = None
        for action in req.get("history") or []:
            self.apply(int(action))
        self.policy = None
        # The last agent move's score, where the game has one (Kuhn, Leduc).
        self.scored = None

    def apply(self, action):
        player = int(self.state.current_player())
        self.actions.append([player, self.state.action_to_string(player, action)])
        self.state.apply_action(action)
        self.history.append(action)

    def rng(self):
        # A string seeds through SHA-512: the same on every machine and run.
        return random.Random(f"{self.seed}/{len(self.history)}")

    def advance(self):
        """Plays chance and the built-in opponents until an agent must move."""
        state = self.state
        while not state.is_terminal():
            player = state.current_player()
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                r, total = self.rng().random(), 0.0
                pick = outcomes[-1][0]
                for action, p in outcomes:
                    total += p
                    if r < total:
                        pick = action
                        break
                self.apply(pick)
            elif player >= 0 and self.seats[player] != "agent":
                self.apply(self.bot_action(player, self.seats[player]))
            else:
                return

    def bot_action(self, player, who):
        legal = self.state.legal_actions(player)
        rng = self.rng()
        if who.startswith("ismcts"):
            return self.ismcts_action(int(who.split(":")[1]) if ":" in who else 3, rng.randrange(2**31))
        if who.startswith("mcts"):
            level = int(who.split(":")[1]) if ":" in who else 3
            seed = rng.randrange(2**31)
            evaluator = self.sp.RandomRolloutEvaluator(1, seed)
            bot = self.sp.MCTSBot(self.game, evaluator, 2.0, MCTS_SIMULATIONS[level - 1], 1000, True, seed, False)
            return bot.step(self.state)
        if who == "cfr":
            probs = self.equilibrium().get(self.state.information_state_string(player))
            if probs:
                r, total = rng.random(), 0.0
                for action, p in probs:
                    total += p
                    if r < total:
                        return action
                return probs[-1][0]
        return rng.choice(legal)

    def ismcts_action(self, level, seed):
        """IS-MCTS's move: it searches states sampled from what this seat
        knows, never the true state. OpenSpiel's Python IS-MCTS, as its C++
        one draws from unseeded generators: every draw here comes from the
        seed, so the same game is played again by a rebuild and `verify`."""
        import numpy as np
        from open_spiel.python.algorithms import ismcts, mcts

        draws = np.random.RandomState(seed)
        evaluator = mcts.RandomRolloutEvaluator(1, random_state=draws)
        bot = ismcts.ISMCTSBot(self.game, evaluator, 2.0, ISMCTS_SIMULATIONS[level - 1], random_state=draws)
        sampler = self.sp.UniformProbabilitySampler(seed, 0.0, 1.0)
        bot.set_resampler(lambda state, player: state.resample_from_infostate(player, sampler))
        return int(bot.step(self.state))

    def equilibrium(self):
        """The CFR+ average policy by information state, computed once per
        machine and kept in the user cache."""
        if self.policy is None:
            with POLICY_LOCK:
                self.policy = POLICIES.get(self.name) or self.solve()
        return self.policy

    def solve(self):
        """The policy from the user cache, else computed and kept there."""
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(cache, "ludus", "openspiel-policies", f"{self.name}-{CFR_ITERATIONS[self.name]}.json")
        try:
            with open(path) as f:
                POLICIES[self.name] = json.load(f)
                return POLICIES[self.name]
        except (OSError, ValueError):
            pass
        notice(f"first use: computing the {self.name} equilibrium (CFR+, {CFR_ITERATIONS[self.name]} iterations; the first game waits for it, once per machine)")
        solver = self.sp.CFRPlusSolver(self.game)
        for _ in range(CFR_ITERATIONS[self.name]):
            solver.evaluate_and_update_policy()
        average = solver.average_policy()
        table = {}

        def walk(state):
            if state.is_terminal():
                return
            if state.is_chance_node():
                for action, _ in state.chance_outcomes():
                    walk(state.child(action))
                return
            key = state.information_state_string()
            if key not in table:
                table[key] = [[a, p] for a, p in average.action_probabilities(state).items()]
            for action in state.legal_actions():
                walk(state.child(action))

        walk(self.game.new_initial_state())
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(table, f)
        os.replace(path + ".tmp", path)
        POLICIES[self.name] = table
        return table

    def action_of(self, seat, given):
        """The action `given` names for `seat`: its text (exactly, then
        ignoring case and spaces) or its number."""
        legal = self.state.legal_actions(seat)
        texts = [self.state.action_to_string(seat, a) for a in legal]
        if isinstance(given, int) or (isinstance(given, str) and given.strip().lstrip("-").isdigit()):
            number = int(given)
            if number in legal:
                return number
        if isinstance(given, str):
            if given in texts:
                return legal[texts.index(given)]
            squash = lambda t: "".join(t.split()).lower()  # noqa: E731
            loose = [a for a, t in zip(legal, texts) if squash(t) == squash(given)]
            if len(loose) == 1:
                return loose[0]
        shown = ", ".join(f"{t} ({a})" for a, t in zip(legal[:60], texts[:60]))
        more = f", … {len(legal) - 60} more (see the legal actions)" if len(legal) > 60 else ""
        raise Refusal(f"{json.dumps(given)} is not a legal action now; the legal actions (text, or number): {shown}{more}")

    def move(self, seat, given):
        if self.state.is_terminal():
            raise Refusal("the game is over")
        if self.state.current_player() != seat:
            raise Refusal(f"it is not seat {seat}'s turn")
        action = self.action_of(seat, given)
        self.scored = self.score(seat, action)
        self.apply(action)
        self.advance()

    def score(self, seat, action):
        """How good `action` is where the equilibrium is known: its value for
        the mover (the equilibrium played by everyone after it, the other
        seats' cards weighed by how likely the equilibrium makes them), the
        best legal action's, and the optimality between the worst (0) and
        the best (1)."""
        if self.name not in CFR_ITERATIONS:
            return None
        values = self.action_values().get(self.state.information_state_string(seat))
        if not values:
            return None
        legal = [values[str(a)] for a in self.state.legal_actions(seat) if str(a) in values]
        mine, best, worst = values.get(str(action)), max(legal), min(legal)
        if mine is None:
            return None
        optimality = 1.0 if best - worst < 1e-12 else (mine - worst) / (best - worst)
        return {"seat": seat, "value": round(mine, 6), "best": round(best, 6), "optimality": round(optimality, 6)}

    def action_values(self):
        """Each information state's action values for the player to move
        there: one walk of the game tree under the equilibrium, each history
        weighed by chance and the other players' reach. Once per process."""
        if self.name in VALUES:
            return VALUES[self.name]
        policy = self.equilibrium()
        sums, weights = {}, {}

        def walk(state, reach):
            if state.is_terminal():
                return list(state.returns())
            if state.is_chance_node():
                total = [0.0] * self.game.num_players()
                for a, p in state.chance_outcomes():
                    total = [t + p * v for t, v in zip(total, walk(state.child(a), [r * p for r in reach]))]
                return total
            player, key = state.current_player(), state.information_state_string()
            probs = dict((int(a), p) for a, p in policy.get(key, []))
            others = 1.0
            for i, r in enumerate(reach):
                if i != player:
                    others *= r
            weights[key] = weights.get(key, 0.0) + others
            total = [0.0] * self.game.num_players()
            for a in state.legal_actions():
                p = probs.get(a, 0.0)
                child = walk(state.child(a), [r * p if i == player else r for i, r in enumerate(reach)])
                cell = sums.setdefault(key, {})
                cell[str(a)] = cell.get(str(a), 0.0) + others * child[player]
                total = [t + p * v for t, v in zip(total, child)]
            return total

        # The chance player's reach is a factor of every other's here.
        walk(self.game.new_initial_state(), [1.0] * self.game.num_players())
        table = {key: {a: v / weights[key] for a, v in cell.items()} for key, cell in sums.items() if weights[key] > 0}
        with POLICY_LOCK:
            VALUES[self.name] = table
        return table

    def view(self, seat):
        state, view = self.state, {}
        for key, has, read in (("observation", self.has_obs, state.observation_string),
                               ("information_state", self.has_info, state.information_state_string)):
            if has:
                try:
                    view[key] = read(seat)
                except self.sp.SpielError:
                    pass
        if "observation" not in view and self.perfect:
            view["observation"] = str(state)
        if not state.is_terminal() and state.current_player() == seat:
            view["legal"] = [[a, state.action_to_string(seat, a)] for a in state.legal_actions(seat)]
        return view

    def snapshot(self):
        state = self.state
        over = state.is_terminal() or self.forfeited is not None
        snap = {
            "history": self.history,
            "current": None if over else int(state.current_player()),
            "over": over,
            "returns": self.returns() if over else None,
            "views": [self.view(seat) for seat in range(len(self.seats))],
        }
        if self.scored is not None:
            snap["scored"] = self.scored
            self.scored = None
        # What every seat may see: the whole game where nothing is hidden,
        # and once it is over. The log from `log_from` on: the plugin keeps
        # what it had (0: all of it, as after a rebuild or at the end of a
        # game that hid it).
        if self.perfect or over:
            start = self.sent if self.perfect else 0
            snap["public"] = {"state": str(state), "log": self.actions[start:], "log_from": start}
            self.sent = len(self.actions)
        return snap

    def returns(self):
        if self.forfeited is None:
            return list(self.state.returns())
        low, high = self.game.min_utility(), self.game.max_utility()
        return [low if seat == self.forfeited else high for seat in range(len(self.seats))]


def handle(sp, match, req):
    op = req.get("op")
    if op == "new":
        match = Match(sp, req)
        match.advance()
    elif match is None:
        raise Refusal("no game yet: `new` first")
    elif op == "move":
        match.move(int(req["seat"]), req["action"])
    elif op == "forfeit":
        if not match.state.is_terminal() and match.forfeited is None:
            match.forfeited = int(req["seat"])
    else:
        raise Refusal(f"unknown op {op!r}")
    return match, match.snapshot()


def answer(pyspiel, match, line):
    """Handles one request line of a game; returns the game as it leaves it."""
    try:
        req = json.loads(line)
    except ValueError:
        send({"id": None, "error": "not JSON"})
        return match
    try:
        match, snap = handle(pyspiel, match, req)
        send({"id": req.get("id"), "ok": snap})
    except Refusal as e:
        send({"id": req.get("id"), "error": str(e)})
    except (KeyError, TypeError, ValueError, pyspiel.SpielError) as e:
        log(f"{req.get('op')} failed: {e!r}")
        send({"id": req.get("id"), "error": f"OpenSpiel refused the request: {e}"})
    except Exception as e:  # noqa: BLE001 — one game's failure is that game's only
        log(f"{req.get('op')} failed unexpectedly: {e!r}")
        send({"id": req.get("id"), "error": f"the OpenSpiel engine failed on this request: {e!r}"})
    return match


class Games:
    """The games of a shared process, by tag: each game's requests run in
    order on the worker pool, one at a time, different games at once."""

    def __init__(self, pyspiel):
        self.sp = pyspiel
        self.pool = ThreadPoolExecutor(max_workers=WORKERS)
        self.lock = threading.Lock()
        self.matches = {}
        # Requests not yet handled, and whether a worker drains them, by tag.
        self.queued = {}
        self.draining = set()
        # Tags of games not gone (the host never uses a tag twice).
        self.alive = set()

    def take(self, tag, line):
        with self.lock:
            self.alive.add(tag)
            self.queued.setdefault(tag, []).append(line)
            if tag in self.draining:
                return
            self.draining.add(tag)
        self.pool.submit(self.drain, tag)

    def gone(self, tag):
        with self.lock:
            self.alive.discard(tag)
            self.matches.pop(tag, None)
            self.queued.pop(tag, None)

    def drain(self, tag):
        CURRENT.tag = tag
        while True:
            with self.lock:
                lines = self.queued.get(tag)
                if not lines:
                    self.draining.discard(tag)
                    self.queued.pop(tag, None)
                    return
                line = lines.pop(0)
                match = self.matches.get(tag)
            match = answer(self.sp, match, line)
            with self.lock:
                # A game that left meanwhile stays gone.
                if tag in self.alive:
                    self.matches[tag] = match


def refuse_all(problem, line):
    """Answers a request with why the engine cannot play."""
    try:
        said = json.loads(line).get("id")
    except (ValueError, AttributeError):
        said = None
    send({"id": said, "error": problem})


def main():
    sys.path.insert(0, HERE)
    import first_use

    problem = first_use.ensure(REQUIREMENT, "pyspiel", "openspiel-venv", "OpenSpiel", "about 16 MB and numpy", notice, __file__)
    pyspiel = None
    if problem is None:
        import pyspiel
    if os.environ.get("LUDUS_ENGINE_SHARED") == "1":
        return serve_shared(pyspiel, problem)
    match = None
    for line in sys.stdin:
        if not line.strip():
            continue
        if problem:
            refuse_all(problem, line)
            continue
        match = answer(pyspiel, match, line)


def serve_shared(pyspiel, problem):
    games = Games(pyspiel)
    for line in sys.stdin:
        tag, _, line = line.strip().partition(" ")
        if not tag:
            continue
        if tag.startswith("-"):
            games.gone(tag[1:])
        elif problem:
            CURRENT.tag = tag
            refuse_all(problem, line)
        else:
            games.take(tag, line)


if __name__ == "__main__":
    main()
