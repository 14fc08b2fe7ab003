#!/usr/bin/env python3
"""Writes the `openspiel` plugin's catalogue (`plugins/openspiel/games.json`)
from the installed OpenSpiel: every game that loads by name with its default
parameters and is played in turns (simultaneous-move games in OpenSpiel's
turn-based form). The plugin embeds the file, so listing games needs no
Python; `tests/openspiel.rs` checks it against the pinned OpenSpiel.

    python catalogue.py > ../games.json
"""

import json
import sys

import pyspiel

# A line of rules where OpenSpiel's long name says too little.
RULES = {
    "tic_tac_toe": "Three in a row on a 3×3 board; x moves first.",
    "connect_four": "Drop discs into a 7-column, 6-row grid; four in a row (any direction) wins.",
    "breakthrough": "Pawns move one step forward or diagonally forward and capture diagonally; reach the far row to win.",
    "hex": "Claim cells of an 11×11 rhombus; x joins top to bottom, o joins left to right. No draws.",
    "go": "Go on a 19×19 board by default (`board_size` 9 for 9×9), Tromp-Taylor scoring, komi 7.5.",
    "backgammon": "Race all fifteen checkers home and off the board; dice are chance.",
    "checkers": "English draughts on 8×8: diagonal moves, forced captures, kings at the far row.",
    "dots_and_boxes": "Draw lines between dots; completing a box scores it and moves again.",
    "kuhn_poker": "Three cards (J, Q, K), one each, one bet round: pass or bet; the higher card wins at showdown.",
    "leduc_poker": "Six cards, one private card each and one public card, two bet rounds; a pair with the public card wins.",
    "liars_dice": "Each player rolls hidden dice; bid on how many dice show a face across all players, or call liar.",
    "hanabi": "Cooperative: play cards in order by colour while seeing everyone's hand but your own; hints cost tokens.",
    "gin_rummy": "Draw and discard to form melds; knock when deadwood is 10 or less, gin with none.",
    "bridge": "Contract bridge: four seats in two partnerships, an auction, then twelve tricks' worth of play.",
    "tiny_bridge_2p": "A two-player bridge with an eight-card deck: an auction, then two tricks.",
    "blackjack": "One player against the dealer: hit or stand, get closer to 21 than the dealer without going over.",
    "2048": "Slide tiles on a 4×4 grid; equal tiles merge; a new tile appears by chance after each move.",
    "chess": "Chess; moves in SAN-like text (`e4`, `Nf3`).",
    "othello": "Place discs to flank and flip the opponent's; most discs at the end wins.",
    "mancala": "Sow stones counter-clockwise; capture by landing in an empty pit on your side.",
    "nim": "Take any number of matches from one pile; by default (misère) whoever takes the last one loses.",
    "pig": "Roll a die and keep adding to your turn's total, or hold; a 1 loses the turn's points. First to 100.",
    "battleship": "Place ships on your hidden grid, then shoot at the other's.",
    "dark_hex": "Hex where you do not see the other player's stones.",
    "phantom_ttt": "Tic-tac-toe where you do not see the other player's marks.",
    "kriegspiel": "Chess where you see only your own pieces; an umpire says which moves are illegal.",
    "goofspiel": "Bid a hidden card from your hand for each prize card; the higher bid takes it.",
}


def entry(name):
    game = pyspiel.load_game(name)
    kind = game.get_type()
    if kind.dynamics == pyspiel.GameType.Dynamics.MEAN_FIELD:
        return None
    if kind.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
        # Chance inside the engine's own generator: not rebuilt from the history.
        return None
    simultaneous = kind.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
    if simultaneous:
        game = pyspiel.convert_to_turn_based(game)
    if not plays_by_action_numbers(game):
        return None
    perfect = game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION
    return {
        "name": name,
        "title": kind.long_name,
        "players": game.num_players(),
        "min_players": kind.min_num_players,
        "max_players": kind.max_num_players,
        "hidden": not perfect,
        "chance": kind.chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC,
        "simultaneous": simultaneous,
        "utility": str(kind.utility).split(".")[-1].lower().replace("_", "-"),
        "parameters": {k: v for k, v in sorted(game.get_parameters().items()) if k != "game"},
        "rules": RULES.get(name, ""),
    }


def plays_by_action_numbers(game):
    """Some games (crossword) take only action structs, never numbers."""
    state = game.new_initial_state()
    for _ in range(1000):
        if not state.is_chance_node():
            break
        outcomes = state.chance_outcomes()
        state.apply_action(outcomes[len(outcomes) // 2][0])
    try:
        return state.is_terminal() or bool(state.legal_actions())
    except pyspiel.SpielError:
        return False


def main():
    games = []
    for name in sorted(pyspiel.registered_names()):
        try:
            e = entry(name)
        except (pyspiel.SpielError, IndexError):
            continue  # needs parameters (or a file) it has no default for
        if e:
            games.append(e)
    json.dump({"open_spiel": "2.0.2", "games": games}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
