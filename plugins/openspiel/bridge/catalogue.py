#!/usr/bin/env python3
"""Writes the `openspiel` plugin's catalogue (`plugins/openspiel/games.json`)
from the installed OpenSpiel: every game that loads by name with its default
parameters and is played in turns (simultaneous-move games in OpenSpiel's
turn-based form), and why each other one is left out (`left_out`). The plugin embeds the file, so listing games needs no
Python; `tests/openspiel.rs` checks it against the pinned OpenSpiel.

    python catalogue.py > ../games.json
"""

import json
import random
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
    "bridge": "Contract bridge: four seats in two partnerships, an auction, then thirteen tricks.",
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


class LeftOut(Exception):
    """A game the plugin does not offer, and why."""


def entry(name):
    game = pyspiel.load_game(name)
    kind = game.get_type()
    if kind.dynamics == pyspiel.GameType.Dynamics.MEAN_FIELD:
        raise LeftOut("a mean-field game: it models a population, not seats that agents play")
    # Chance inside the engine's own generator, seeded by `rng_seed`: the
    # bridge loads such a game afresh for each match with the match's seed,
    # so the same actions rebuild the same game.
    sampled = kind.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC
    simultaneous = kind.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
    if simultaneous:
        game = pyspiel.convert_to_turn_based(game)
    if not plays_by_action_numbers(game):
        raise LeftOut("it takes structured actions only, never action numbers, so an agent cannot name a move")
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
        # The match's seed sets `rng_seed`: a player does not choose it.
        "parameters": {k: v for k, v in sorted(game.get_parameters().items()) if k not in ("game", "rng_seed")},
        "rules": RULES.get(name, ""),
        "sampled": sampled,
        "ismcts": not perfect and not sampled and searches_information_sets(game),
    }


def searches_information_sets(game):
    """Whether OpenSpiel's IS-MCTS plays the game: it samples the states a
    player's information state allows (`ResampleFromInfostate`), which
    only some games implement."""
    state, rng = game.new_initial_state(), random.Random(1)
    for _ in range(2000):
        if state.is_terminal() or not state.is_chance_node():
            break
        state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
    if state.is_terminal():
        return False
    evaluator = pyspiel.RandomRolloutEvaluator(1, 1)
    bot = pyspiel.ISMCTSBot(1, evaluator, 2.0, 20, -1, pyspiel.ISMCTSFinalPolicyType.NORMALIZED_VISIT_COUNT, False, False)
    try:
        bot.step(state)
        return True
    except pyspiel.SpielError:
        return False


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
    games, left_out = [], {}
    for name in sorted(pyspiel.registered_names()):
        try:
            games.append(entry(name))
        except LeftOut as why:
            left_out[name] = str(why)
        except (pyspiel.SpielError, IndexError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            left_out[name] = f"it does not load with its default parameters (OpenSpiel says: {first[:200]})"
    json.dump({"open_spiel": "2.0.2", "games": games, "left_out": left_out}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
