"""Drives `alembic mcp` with the official Python MCP SDK (`pip install mcp`).

Run by crates/alembic-cli/tests/suite/mcp_python.rs, over stdio or streamable HTTP:

    python interop.py --stdio /path/to/alembic --project DIR [--mode legacy|auto]
    python interop.py --url http://127.0.0.1:PORT/mcp [--mode legacy|auto]

The project must contain README.md with the word `needle_token`. The script checks what it can
see as a client and prints one JSON object on stdout: the negotiated protocol version, the tool
names and every call it made with whether it was an error, so the Rust side can match them
against `alembic audit tail --json`. Any failed check exits with status 1 and a message.
"""

import argparse
import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
from mcp.types import Implementation

CLIENT_NAME = "alembic-interop-test"
REQUIRED_TOOLS = {"search_project_code", "read_project_file"}
MEMORY_TOOLS = {"memory_recall", "memory_remember", "memory_forget"}


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(client, calls, tool, args):
    result = await client.call_tool(tool, args)
    calls.append({"tool": tool, "is_error": bool(result.is_error)})
    return result


async def scenario(client, with_memory):
    info = client.server_info
    check(info is not None and info.name == "alembic", f"server name is {info!r}, expected alembic")
    tools = (await client.list_tools()).tools
    names = sorted(t.name for t in tools)
    missing = (REQUIRED_TOOLS | (MEMORY_TOOLS if with_memory else set())) - set(names)
    check(not missing, f"tools/list lacks {sorted(missing)}; got {names}")
    for t in tools:
        check(t.input_schema.get("type") == "object", f"{t.name} has no object input schema")
        check(t.description, f"{t.name} has no description")

    calls = []
    found = await call(client, calls, "search_project_code", {"pattern": "needle_token"})
    check(not found.is_error, f"search failed: {text_of(found)}")
    check("README.md" in text_of(found), f"search did not find README.md: {text_of(found)}")
    check(isinstance(found.structured_content, dict), "search has no structured content")

    read = await call(client, calls, "read_project_file", {"filePath": "README.md"})
    check(not read.is_error, f"read failed: {text_of(read)}")
    check("needle_token" in text_of(read), f"read did not return the file: {text_of(read)}")

    escape = await call(client, calls, "read_project_file", {"filePath": "../../etc/passwd"})
    check(escape.is_error, f"a path escape was not refused: {text_of(escape)}")
    check("root:x:0:0" not in text_of(escape), "a path escape leaked /etc/passwd")
    check("blocked" in text_of(escape), f"the refusal does not say blocked: {text_of(escape)}")

    if with_memory:
        await memory_scenario(client, calls)
    return {"protocol": client.protocol_version, "tools": names, "calls": calls}


async def memory_scenario(client, calls):
    kept = await call(
        client,
        calls,
        "memory_remember",
        {"content": "The payment module uses the Coordinator pattern", "type": "fact", "importance": 8},
    )
    check(not kept.is_error, f"memory_remember failed: {text_of(kept)}")
    memory_id = find_id(kept.structured_content)
    check(memory_id is not None, f"memory_remember returned no id: {kept.structured_content}")

    recalled = await call(client, calls, "memory_recall", {"query": "payment coordinator", "k": 3})
    check(not recalled.is_error, f"memory_recall failed: {text_of(recalled)}")
    check("Coordinator" in text_of(recalled), f"memory_recall missed the memory: {text_of(recalled)}")

    forgot = await call(client, calls, "memory_forget", {"id": memory_id})
    check(not forgot.is_error, f"memory_forget failed: {text_of(forgot)}")
    again = await call(client, calls, "memory_recall", {"query": "payment coordinator", "k": 3})
    check("Coordinator" not in text_of(again), f"a forgotten memory was recalled: {text_of(again)}")


def find_id(data):
    """The memory id in memory_remember's structured result."""
    if not isinstance(data, dict):
        return None
    for key in ("id", "memoryId"):
        if isinstance(data.get(key), (int, str)):
            return data[key]
    for value in data.values():
        found = find_id(value) if isinstance(value, dict) else None
        if found is not None:
            return found
    return None


async def main():
    parser = argparse.ArgumentParser()
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="ALEMBIC")
    target.add_argument("--url")
    parser.add_argument("--project")
    parser.add_argument("--mode", default="legacy")
    parser.add_argument("--memory", action="store_true")
    args = parser.parse_args()
    if args.stdio:
        server = StdioServerParameters(command=args.stdio, args=["mcp", "--project", args.project])
    else:
        server = args.url
    info = Implementation(name=CLIENT_NAME, version="1.0")
    async with Client(server, client_info=info, mode=args.mode, cache=None) as client:
        report = await scenario(client, args.memory)
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except* CheckFailed as group:
        for failure in group.exceptions:
            print(f"check failed: {failure}", file=sys.stderr)
        sys.exit(1)
