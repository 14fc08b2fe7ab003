"""The peer in `LUDUS_BENCH=shared`: OpenSpiel's own MCP example
(`open_spiel/python/examples/mcp_tool_server`, in the open_spiel wheel) over
stdio, driven as an agent would drive it: GAMES connect-four games started,
then one move each (`legal_actions`, then `play_action` of the first one;
its reply is the random opponent's move). Prints one JSON object: the
example's resident memory with every game live, and a move's round trip
(`play_action` alone, p50 and p95, in µs).

    python openspiel_peer.py GAMES     (a venv with open_spiel, fastmcp, absl-py)
"""

import asyncio
import json
import os
import sys
import time

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

MODULE = "open_spiel.python.examples.mcp_tool_server.server"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def server_pid():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if MODULE.encode() in f.read():
                        return int(pid)
            except OSError:
                pass
    return None


def data(result):
    return getattr(result, "data", None) if not isinstance(result, (str, list)) else result


async def main(games):
    transport = StdioTransport(command=sys.executable, args=["-m", MODULE, "--nouse_http"])
    async with Client(transport) as c:
        sessions = []
        for _ in range(games):
            sessions.append(data(await c.call_tool("start_game", {"game_name": "connect_four", "player_id": 0})))
        took = []
        for sid in sessions:
            legal = data(await c.call_tool("legal_actions", {"session_id": sid}))
            t = time.perf_counter()
            await c.call_tool("play_action", {"session_id": sid, "action": legal[0]})
            took.append((time.perf_counter() - t) * 1e6)
        took.sort()
        pid = server_pid()
        print(json.dumps({
            "games": games,
            "rss_kib": rss_kib(pid) if pid else 0,
            "move_p50_us": took[len(took) // 2],
            "move_p95_us": took[len(took) * 95 // 100],
        }))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
