#!/usr/bin/env python3
"""Instructions per `hanoi_get_state` call in a Ludus server, counted by
valgrind's callgrind: where two builds differ by a few percent in time,
the machine's swings hide it, and an instruction count does not.

    python3 host/benches/instructions.py BINARY [stdio|http] [CALLS]

The server runs under callgrind with instrumentation off; the script opens
a session, starts a Hanoi game, makes 200 calls to warm up, then counts
only the next CALLS (2,000 by default) and prints the count per call.
Over HTTP it is one kept-alive connection of a 2025-06-18 client, as the
speed benchmark's minimal client, with Python's headers. Compare counts
of the same CALLS: the warm-up's share differs with it. Runs of one
binary have differed by up to 1% over HTTP (other threads' timers run
meanwhile), far less over stdio. Needs valgrind (`apt-get install
valgrind`); each run takes about a minute.
"""

import glob
import shutil
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "instructions", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
START = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hanoi_init_simulator", "arguments": {"n": 3}}}


def state(env_id):
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hanoi_get_state", "arguments": {"env_id": env_id}}}


class Stdio:
    def __init__(self, server):
        self.server = server

    def call(self, message):
        self.server.stdin.write((json.dumps(message) + "\n").encode())
        self.server.stdin.flush()
        return json.loads(self.server.stdout.readline()) if "id" in message else None


class Http:
    def __init__(self, port):
        for _ in range(600):
            try:
                self.connection = http.client.HTTPConnection("127.0.0.1", port)
                self.connection.connect()
                break
            except OSError:
                time.sleep(0.5)
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.session = None

    def call(self, message):
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": "2025-06-18"}
        if self.session:
            headers["mcp-session-id"] = self.session
        self.connection.request("POST", "/mcp", json.dumps(message), headers)
        answer = self.connection.getresponse()
        body = answer.read()
        self.session = self.session or answer.getheader("mcp-session-id")
        return json.loads(body) if body else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    binary = sys.argv[1]
    transport = sys.argv[2] if len(sys.argv) > 2 else "stdio"
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    work = tempfile.mkdtemp(prefix="ludus-instructions-")
    out = os.path.join(work, "callgrind.out")
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", binary, "serve", "--store", "memory"]
    if transport == "http":
        port = free_port()
        command += ["--http", f"127.0.0.1:{port}"]
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "data"))
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=open(os.path.join(work, "server.log"), "w"), env=env)
    client = Http(port) if transport == "http" else Stdio(server)
    client.call(INIT)
    client.call(INITIALIZED)
    env_id = client.call(START)["result"]["structuredContent"]["env_id"]
    request = state(env_id)
    for _ in range(200):
        client.call(request)
    subprocess.run(["callgrind_control", "-i", "on", str(server.pid)], capture_output=True, check=True)
    for _ in range(calls):
        client.call(request)
    subprocess.run(["callgrind_control", "-i", "off", str(server.pid)], capture_output=True, check=True)
    subprocess.run(["callgrind_control", "-d", str(server.pid)], capture_output=True, check=True)
    server.terminate()
    server.wait()
    total = 0
    for dump in glob.glob(out + "*"):
        with open(dump) as f:
            total += sum(int(line.split()[1]) for line in f if line.startswith("totals:"))
    shutil.rmtree(work, ignore_errors=True)
    print(f"{binary} over {transport}: {total / calls:,.0f} instructions per hanoi_get_state ({calls} calls)")


if __name__ == "__main__":
    main()
