"""Connect Four against the computer: the Python example game of the Ludus SDK.

`componentize-py` turns this module into a WebAssembly component for the world
in `wit/connect-four.wit` (see `build.sh`). Each WIT export is a class of the
same name here: `Meta` describes the plugin, `Tools` holds one method per tool.

One component instance is one game session, so module-level state is the
game: the host gives every `start` a fresh instance and routes each `drop`
and `get-state` to the instance whose `game-id` the agent passed.
"""

import json
import random

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tools
from wit_world.imports import host, types
from wit_world.imports import outcome as record

COLUMNS, ROWS = 7, 6
YOU, COMPUTER = "X", "O"

# The game of this instance: each column's discs, bottom first.
board: list[list[str]] = [[] for _ in range(COLUMNS)]
moves: list[int] = []
outcome = tools.Outcome.PLAYING
computer_starts = False
# Drops refused (a full column), and the index of the first among yours.
refused = 0
first_refused: int | None = None
# The instance was snapshotted at build time, random module included: seed
# per session from the host (the agent's `seed`, or a random one).
rng = random.Random()


def hint(name, role=types.SessionRole.USES, read_only=False):
    """A tool hint: how a tool relates to sessions, plus MCP annotations."""
    session_param = "game-id" if role == types.SessionRole.USES else None
    return types.ToolHint(
        name=name, role=role, session_param=session_param, title=None,
        read_only=read_only, destructive=False, idempotent=read_only, open_world=False,
        default_wait_ms=None, max_wait_ms=None, ui_resource=None,
    )


class Meta(exports.Meta):
    def describe(self) -> types.PluginInfo:
        return types.PluginInfo(
            name="connect_four",
            title="Connect Four",
            version="0.1.0",
            description="Connect Four against the computer (a Ludus game written in Python).",
            tools=[
                hint("start", types.SessionRole.CREATES),
                hint("drop"),
                hint("get-state", read_only=True),
            ],
            resources=[],
            idle_timeout_ms=None,
        )

    def read_resource(self, uri: str) -> str:
        raise Err(f"connect_four has no resource {uri}")


class Tools(exports.Tools):
    def start(self, computer_first: bool | None, seed: int | None) -> tools.Game:
        global computer_starts
        rng.seed(host.seed())
        computer_starts = bool(computer_first)
        if computer_first:
            play(computer_move(), COMPUTER)
        tell()
        return game()

    def drop(self, game_id: str, column: int) -> tools.Game:
        global refused, first_refused
        if outcome != tools.Outcome.PLAYING:
            raise Err(f"the game is over ({describe_outcome()}); call `connect_four_start` for a new one")
        if len(board[column - 1]) == ROWS:
            if first_refused is None:
                first_refused = len(your_moves()) + refused
            refused += 1
            tell()
            raise Err(f"column {column} is full; legal columns: {legal_columns()}")
        play(column, YOU)
        if outcome == tools.Outcome.PLAYING:
            play(computer_move(), COMPUTER)
        tell()
        return game()

    def get_state(self, game_id: str) -> tools.Game:
        return game()


def play(column: int, disc: str) -> None:
    global outcome
    board[column - 1].append(disc)
    moves.append(column)
    if wins(column, disc):
        outcome = tools.Outcome.YOU_WON if disc == YOU else tools.Outcome.COMPUTER_WON
    elif not legal_columns():
        outcome = tools.Outcome.DRAW


def your_moves() -> list[int]:
    """Your drops: every other move, from the first or the second."""
    return moves[1 if computer_starts else 0 :: 2]


VERDICTS = {
    tools.Outcome.PLAYING: record.Verdict.PLAYING,
    tools.Outcome.YOU_WON: record.Verdict.WON,
    tools.Outcome.COMPUTER_WON: record.Verdict.LOST,
    tools.Outcome.DRAW: record.Verdict.DRAW,
}


def tell() -> None:
    """States where the game stands for its result record (`ludus report`)."""
    record.tell(record.Statement(
        verdict=VERDICTS[outcome],
        parameters=json.dumps({"computer_first": computer_starts}),
        moves=len(your_moves()),
        illegal_moves=refused,
        first_failing_move=first_refused,
        optimum=None,
        figures=json.dumps({"columns": moves}),
    ))


def legal_columns() -> list[int]:
    return [c + 1 for c in range(COLUMNS) if len(board[c]) < ROWS]


def at(col: int, row: int) -> str | None:
    if 0 <= col < COLUMNS and 0 <= row < len(board[col]):
        return board[col][row]
    return None


def wins(column: int, disc: str) -> bool:
    """Whether the disc just dropped into `column` makes four in a row."""
    col, row = column - 1, len(board[column - 1]) - 1
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            c, r = col + sign * dc, row + sign * dr
            while at(c, r) == disc:
                run += 1
                c, r = c + sign * dc, r + sign * dr
        if run >= 4:
            return True
    return False


def would_win(column: int, disc: str) -> bool:
    board[column - 1].append(disc)
    try:
        return wins(column, disc)
    finally:
        board[column - 1].pop()


def computer_move() -> int:
    """Win if it can, block if it must, never set up the agent's win; else
    prefer the centre, ties broken by the seeded generator."""
    legal = legal_columns()
    for disc in (COMPUTER, YOU):
        for c in legal:
            if would_win(c, disc):
                return c
    safe = [c for c in legal if not gives_away(c)] or legal
    best = min(abs(c - 4) for c in safe)
    return rng.choice([c for c in safe if abs(c - 4) == best or rng.random() < 0.25])


def gives_away(column: int) -> bool:
    """Whether playing `column` lets the agent win on top of it."""
    board[column - 1].append(COMPUTER)
    try:
        return len(board[column - 1]) < ROWS and would_win(column, YOU)
    finally:
        board[column - 1].pop()


def describe_outcome() -> str:
    return {
        tools.Outcome.PLAYING: "your move",
        tools.Outcome.YOU_WON: "you won",
        tools.Outcome.COMPUTER_WON: "the computer won",
        tools.Outcome.DRAW: "a draw",
    }[outcome]


def render() -> str:
    lines = [" " + " ".join(str(c + 1) for c in range(COLUMNS))]
    for row in reversed(range(ROWS)):
        lines.append("|" + "|".join(at(c, row) or " " for c in range(COLUMNS)) + "|")
    return "\n".join(lines)


def game() -> tools.Game:
    game_id = host.session_id() or ""
    if outcome == tools.Outcome.PLAYING:
        computer_moved = moves and board[moves[-1] - 1][-1] == COMPUTER
        last = f"The computer dropped into column {moves[-1]}. " if computer_moved else ""
        next_step = f"{last}Your move: call `connect_four_drop` with game_id \"{game_id}\" and a column from {legal_columns()}."
    else:
        next_step = f"Game over: {describe_outcome()}. Call `connect_four_start` to play again."
    return tools.Game(
        game_id=game_id,
        outcome=outcome,
        moves=list(moves),
        legal_columns=legal_columns() if outcome == tools.Outcome.PLAYING else [],
        text=f"{render()}\n\nYou are X, the computer is O.\n{next_step}",
    )
