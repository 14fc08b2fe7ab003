"""Tower of Hanoi through `ludus serve --http`, as the official MCP Python
SDK's default HTTP client plays it: `Client(url)` with the URL the server
printed at start, nothing else configured (its default protocol, the
stateless 2026-07-28, with `server/discover` and no MCP session).

Run by tests/http.rs with the SDK from PyPI: python default_http_hanoi.py URL
It prints one JSON report on stdout and exits non-zero when something is off.
"""

import asyncio
import json
import sys

from mcp import Client


def refused(result):
    """A tool error: said on stderr, and the run fails."""
    if result.is_error:
        print("\n".join(block.text for block in result.content if block.type == "text"), file=sys.stderr)
        sys.exit(1)
    return result


async def main(url):
    report = {}
    async with Client(url) as client:
        report["protocol"] = str(client.protocol_version)
        started = refused(await client.call_tool("hanoi_init_simulator", {"n": 2}))
        env = started.structured_content["env_id"]
        plan = await client.call_tool("hanoi_execute_moves", {"env_id": env, "moves": [[1, 0, 1], [2, 0, 2], [1, 1, 2]], "decision": 1})
        report["error"] = plan.is_error
        report["goal_reached"] = plan.structured_content["goal_reached"]
        state = await client.call_tool("hanoi_get_state", {"env_id": env})
        report["moves_made"] = state.structured_content["moves_made"]
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
