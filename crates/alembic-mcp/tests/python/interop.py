"""Drives `alembic mcp` with the official Python MCP SDK (`pip install mcp`).

Run by crates/alembic-cli/tests/suite/mcp_python.rs, over stdio or streamable HTTP:

    python interop.py --stdio /path/to/alembic --project DIR [--mode legacy|auto]
    python interop.py --url http://127.0.0.1:PORT/mcp [--mode legacy|auto] [--bearer TOKEN]

The project must contain README.md with the word `needle_token`. The script checks what it can
see as a client and prints one JSON object on stdout: the negotiated protocol version, the tool
names and every call it made with whether it was an error, so the Rust side can match them
against `alembic audit tail --json`. Any failed check exits with status 1 and a message.

With `--surface PROJECT_DIR` (legacy mode: `resources/subscribe` is a handshake-era method) it
also checks resources (list, templates, read, subscribe), prompts (list, get) and the change
notifications: the project must hold the skill `demo-skill` and the temporary forged tool
`expiring_probe`, which expires a few seconds after the server starts, so
`notifications/tools/list_changed` must arrive; the script edits the skill and adds another, so
`notifications/resources/updated` and `notifications/resources/list_changed` must arrive too.
"""

import argparse
import asyncio
import json
import pathlib
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


class Notifications:
    """Server notifications by method, as the client's message handler receives them."""

    def __init__(self):
        self.seen = {}
        self.changed = asyncio.Event()

    async def handle(self, message):
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.seen.setdefault(method, []).append(message)
            self.changed.set()

    async def wait_for(self, method, timeout=30.0):
        async def until():
            while method not in self.seen:
                self.changed.clear()
                await self.changed.wait()
            return self.seen.pop(method)

        try:
            return await asyncio.wait_for(until(), timeout)
        except TimeoutError:
            raise CheckFailed(f"no {method} within {timeout}s; got {sorted(self.seen)}")


async def surface_scenario(client, notes, project):
    resources = (await client.list_resources()).resources
    uris = [str(r.uri) for r in resources]
    check("alembic://overview" in uris, f"resources/list lacks the overview: {uris}")
    check("alembic://skill/demo-skill" in uris, f"resources/list lacks the skill: {uris}")
    for scope in ("project", "user", "team"):
        check(f"alembic://memories/{scope}" in uris, f"resources/list lacks {scope} memories: {uris}")
    templates = (await client.list_resource_templates()).resource_templates
    shapes = sorted(t.uri_template for t in templates)
    expected = sorted(["alembic://recipe/{id}", "alembic://skill/{name}", "alembic://memories/{scope}"])
    check(shapes == expected, f"resource templates are {shapes}, expected {expected}")
    skill = (await client.read_resource("alembic://skill/demo-skill")).contents[0]
    check("Greets someone" in skill.text, f"the skill resource is not its SKILL.md: {skill.text!r}")
    memories = (await client.read_resource("alembic://memories/project")).contents[0]
    check(json.loads(memories.text) == [], f"a fresh project has project memories: {memories.text!r}")

    prompts = (await client.list_prompts()).prompts
    demo = next((p for p in prompts if p.name == "demo-skill"), None)
    check(demo is not None, f"prompts/list lacks demo-skill: {[p.name for p in prompts]}")
    args = {a.name: a.required for a in demo.arguments or []}
    check(args == {"who": True}, f"demo-skill's prompt arguments are {args}")
    got = await client.get_prompt("demo-skill", {"who": "Ada"})
    text = got.messages[0].content.text
    check("Greets someone" in text and "Ada" in text, f"prompts/get did not render the skill: {text!r}")

    await client.subscribe_resource("alembic://skill/demo-skill")
    skills = pathlib.Path(project) / ".alembic" / "skills"
    (skills / "demo-skill" / "SKILL.md").write_text("---\nname: demo-skill\n---\n\nGreets someone warmly.\n")
    updated = await notes.wait_for("notifications/resources/updated")
    check(str(updated[0].params.uri) == "alembic://skill/demo-skill", f"updated the wrong uri: {updated}")
    (skills / "second-skill").mkdir()
    (skills / "second-skill" / "SKILL.md").write_text("---\nname: second-skill\ndescription: Second\n---\n")
    await notes.wait_for("notifications/resources/list_changed")

    await notes.wait_for("notifications/tools/list_changed")
    names = [t.name for t in (await client.list_tools()).tools]
    check("expiring_probe" not in names, f"an expired forged tool is still listed: {names}")


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
    parser.add_argument("--surface", metavar="PROJECT_DIR")
    parser.add_argument("--bearer", metavar="TOKEN")
    args = parser.parse_args()
    if args.stdio:
        server = StdioServerParameters(command=args.stdio, args=["mcp", "--project", args.project])
    elif args.bearer:
        # A token-protected server: every request carries `Authorization: Bearer <token>`.
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {args.bearer}"}
        server = streamable_http_client(args.url, http_client=httpx2.AsyncClient(headers=headers))
    else:
        server = args.url
    info = Implementation(name=CLIENT_NAME, version="1.0")
    notes = Notifications()
    async with Client(
        server, client_info=info, mode=args.mode, cache=None, message_handler=notes.handle
    ) as client:
        if args.surface:
            names = [t.name for t in (await client.list_tools()).tools]
            check("expiring_probe" in names, f"the temporary forged tool is not listed: {names}")
        report = await scenario(client, args.memory)
        if args.surface:
            await surface_scenario(client, notes, args.surface)
            report["surface"] = True
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except* CheckFailed as group:
        for failure in group.exceptions:
            print(f"check failed: {failure}", file=sys.stderr)
        sys.exit(1)
