"""Drives `graphmind mcp` with the Python MCP SDK's stdio client (PyPI `mcp`), for the MCP
integration tests (tests/mcp_*.rs). The SDK spawns the server; this script reads one JSON
request per line on stdin and prints one JSON answer per line on stdout.

argv: the graphmind binary, then its arguments (`mcp --port N`). The client names itself
$MCP_CLIENT_NAME (default "py-test"). GRAPHMIND_HOME is passed on to the server.

Requests:
  {"op": "tools"}                      -> {"tools": [{"name", "description", "inputSchema"}]}
  {"op": "call", "name": N, "args": A, "timeout": S, "progress": bool}
                                       -> {"isError": bool, "text": str, "progress": [n...]}
                                          or {"error": {"code": c, "message": m}}
                                          or {"timeout": true}
  {"op": "resources"}                  -> {"resources": [{"uri", "name", "title", "description"}]}
  {"op": "read", "uri": U}             -> {"contents": [{"uri", "text"}]} or {"error": {...}}
  {"op": "quit"}
The first line printed is {"ready": <server name>}.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation


def say(obj) -> None:
    print(json.dumps(obj), flush=True)


async def main() -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith("GRAPHMIND_")}
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=env)
    name = os.environ.get("MCP_CLIENT_NAME", "py-test")
    loop = asyncio.get_running_loop()
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, client_info=Implementation(name=name, version="1.0")
        ) as session:
            init = await session.initialize()
            say({"ready": init.server_info.name if init.server_info else None})
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    return
                req = json.loads(line)
                op = req.get("op")
                if op == "quit":
                    return
                if op == "tools":
                    tools = await session.list_tools()
                    say({"tools": [
                        {"name": t.name, "description": t.description,
                         "inputSchema": t.input_schema}
                        for t in tools.tools
                    ]})
                    continue
                if op == "resources":
                    res = await session.list_resources()
                    say({"resources": [
                        {"uri": str(r.uri), "name": r.name, "title": r.title,
                         "description": r.description}
                        for r in res.resources
                    ]})
                    continue
                if op == "read":
                    try:
                        res = await session.read_resource(req["uri"])
                        say({"contents": [
                            {"uri": str(c.uri), "text": getattr(c, "text", None)}
                            for c in res.contents
                        ]})
                    except MCPError as e:
                        say({"error": {"code": e.code, "message": e.message}})
                    continue
                progress = []

                async def on_progress(p, total, message):
                    progress.append(p)

                try:
                    res = await session.call_tool(
                        req["name"],
                        req.get("args"),
                        read_timeout_seconds=req.get("timeout", 30),
                        progress_callback=on_progress if req.get("progress") else None,
                    )
                    text = "\n".join(
                        c.text for c in res.content if getattr(c, "type", None) == "text"
                    )
                    say({"isError": bool(res.is_error), "text": text, "progress": progress})
                except MCPError as e:
                    if "timed out" in e.message.lower() or e.code == 408:
                        say({"timeout": True, "error": {"code": e.code, "message": e.message}})
                    else:
                        say({"error": {"code": e.code, "message": e.message}})


asyncio.run(main())
