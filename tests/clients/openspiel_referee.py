#!/usr/bin/env python3
"""The hidden-information referee of `tests/openspiel.rs`: replays a finished
game's actions in OpenSpiel itself (not through Ludus) and prints, for each
seat, every observation and information-state string that seat had at any
point of the game: what that seat may legitimately have been shown.

    python openspiel_referee.py '{"game": "kuhn_poker", "params": {}, "actions": [0, 1, 0, 1]}'
"""

import json
import sys

import pyspiel


def main():
    spec = json.loads(sys.argv[1])
    game = pyspiel.load_game(spec["game"], spec.get("params") or {})
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    kind = game.get_type()
    views = {p: set() for p in range(game.num_players())}
    state = game.new_initial_state()

    def look():
        for p in views:
            if kind.provides_observation_string:
                views[p].add(state.observation_string(p))
            if kind.provides_information_state_string:
                views[p].add(state.information_state_string(p))

    look()
    for action in spec["actions"]:
        state.apply_action(action)
        if not state.is_terminal():
            look()
    json.dump({str(p): sorted(v) for p, v in views.items()}, sys.stdout)


if __name__ == "__main__":
    main()
