"""A person plays chess against an agent through Ludus, as the official MCP
Python SDK's elicitation callback: the agent's calls go out, and each time
the human is to move the server asks this client's "user" with a form.

Run by tests/chess.rs with the SDK from PyPI: python human_chess.py LUDUS ARG...
It prints one JSON report on stdout and exits non-zero when something is off.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ElicitResult

# What the human answers, in order: a move, another, a refusal, then a move.
ANSWERS = ["e5", "Nc6", None, "a6"]


def text(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


async def main(command, args):
    answers = list(ANSWERS)
    forms = []

    async def the_human(context, params):
        schema = params.requestedSchema
        forms.append({"message": params.message, "choices": schema["properties"]["move"]["enum"]})
        move = answers.pop(0)
        if move is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"move": move})

    report = {}
    server = StdioServerParameters(command=command, args=args)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=the_human) as session:
            await session.initialize()
            created = await session.call_tool("chess_create_game", {"type": "human", "image": True})
            game = created.structuredContent["game_id"]
            report["image_types"] = [block.mimeType for block in created.content if block.type == "image"]
            moves = []
            for move in ["e4", "Nf3", "Bb5"]:
                result = await session.call_tool("chess_finish_turn", {"game_id": game, "move": move})
                moves.append(text(result).splitlines()[0])
            again = await session.call_tool("chess_wait_for_next_turn", {"game_id": game})
            moves.append(text(again).splitlines()[0])
            report["headlines"] = moves
            report["fen"] = again.structuredContent["fen"]
            report["status"] = again.structuredContent["status"]
    report["forms"] = len(forms)
    report["first_form_offers_e5"] = "e5" in forms[0]["choices"] if forms else False
    report["first_form_says"] = forms[0]["message"].splitlines()[0] if forms else ""
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
