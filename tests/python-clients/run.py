"""Drives the official Python MCP SDK (`mcp` 2.3, the `initialize` era) against a hooks-mcp server
and prints one JSON object with what it observed (tests/protocol/python_clients.rs asserts on it).

    python run.py stdio <server-binary> [server-args...]
    python run.py http <url> <second-url>

stdio: `stdio_client` spawns the server; `ClientSession` initializes, lists the tools, calls
`channel_publish` and `channel_read`, lists the resources and reads the channel's.

http: `streamable_http_client` with `ClientSession` against a daemon at <url>: initialize, a tool
call; then the run pauses (it prints {"pause": "restart"} and waits for a line on stdin) while the
caller restarts that daemon on the same port, calls again in the same session and waits for the
SDK's GET stream to be open again; then every
request goes to <second-url> (a second daemon of the same store: the run's HTTP client sends each
request there, as a balancer would, below the SDK, which keeps its session), which must answer
within that session; then the session is ended by a DELETE that is not the SDK's (as another
daemon's DELETE or pruning would end it) and the SDK's next two calls show what it does with a
session that is gone. Every HTTP exchange is recorded (`wire`): which daemon, the JSON-RPC
method, the Mcp-Session-Id sent and received, the status or the error.

Environment: every HOOKS_MCP_* and MCP_* variable is passed on to a stdio server (with the SDK's
default safe environment); HOOKS_MCP_TOKEN is sent as the bearer token over HTTP.

Exit status: 0 when every step succeeded, 1 when a step failed (the JSON says which and why), 2 on
bad arguments or when the run overran its time limit.
"""

import json
import os
import sys
import traceback
from importlib import metadata

import anyio
import httpx2
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client

CHANNEL = "python-client-tests"
URI = f"hooks://channels/{CHANNEL}"
# How long one request may take, and the whole run.
REQUEST_S = 20
RUN_S = 90

report = {
    "client": {"package": "mcp", "version": metadata.version("mcp")},
    "transport": None,
    "steps": {},
    "failed": [],
    "wire": [],
    "transportErrors": [],
}


def describe(error: BaseException) -> str:
    if isinstance(error, MCPError):
        return f"MCPError {error.code}: {error.message}"
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions)
    return f"{type(error).__name__}: {error}"


async def step(name: str, body, *, may_fail: bool = False):
    """Runs one step, recording its value or its error; returns the value (None on failure).
    A step that `may_fail` is an observation: its error is recorded but fails no run."""
    try:
        with anyio.fail_after(REQUEST_S):
            value = await body()
        report["steps"][name] = {"ok": True, "value": value}
        return value
    except Exception as error:  # noqa: BLE001 - every failure is a finding to report
        entry = {"ok": False, "error": describe(error)}
        if isinstance(error, MCPError):
            entry["code"] = error.code
        report["steps"][name] = entry
        if not may_fail:
            report["failed"].append(name)
        return None


def dump(model) -> object:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def on_message(message) -> None:
    """The session's message handler: transport errors reach it as exceptions."""
    if isinstance(message, Exception):
        report["transportErrors"].append(describe(message))


def tool_result(result) -> object:
    value = dump(result)
    if value.get("isError"):
        raise RuntimeError(f"the tool answered an error: {value}")
    return value


async def initialize(session: ClientSession) -> dict:
    result = await session.initialize()
    return {
        "protocolVersion": result.protocol_version,
        "serverInfo": dump(result.server_info),
        "capabilities": dump(result.capabilities),
    }


async def over_stdio(command: str, args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith(("HOOKS_MCP_", "MCP_"))}
    server = StdioServerParameters(command=command, args=args, env=get_default_environment() | env)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            if await step("initialize", lambda: initialize(session)) is None:
                return

            async def tools():
                return [t.name for t in (await session.list_tools()).tools]

            await step("tools/list", tools)
            message = "published by the Python SDK over stdio"
            await step(
                "channel_publish",
                lambda: call(session, "channel_publish", {"channel": CHANNEL, "message": message}),
            )
            await step("channel_read", lambda: call(session, "channel_read", {"channel": CHANNEL}))

            async def resources():
                return [dump(r) for r in (await session.list_resources()).resources]

            await step("resources/list", resources)

            async def read():
                contents = dump(await session.read_resource(URI))["contents"]
                text = contents[0].get("text") if contents else None
                return {"contents": contents, "value": json.loads(text) if text else None}

            await step("resources/read", read)


async def call(session: ClientSession, name: str, arguments: dict) -> object:
    return tool_result(await session.call_tool(name, arguments))


class Router(httpx2.AsyncBaseTransport):
    """Sends every request to the current daemon (as a balancer would) and records it."""

    def __init__(self, first: httpx2.URL, second: httpx2.URL) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.daemons = {"first": first, "second": second}
        self.current = "first"

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        target = self.daemons[self.current]
        request.url = request.url.copy_with(host=target.host, port=target.port)
        request.headers["host"] = f"{target.host}:{target.port}"
        entry = {
            "daemon": self.current,
            "http": request.method,
            "rpc": None,
            "sessionSent": request.headers.get("mcp-session-id"),
        }
        if request.method == "POST":
            try:
                body = json.loads(request.content)
                entry["rpc"] = body.get("method") or "response"
            except (ValueError, AttributeError):
                entry["rpc"] = "unparsed"
        report["wire"].append(entry)
        try:
            response = await self.inner.handle_async_request(request)
        except Exception as error:
            entry["error"] = describe(error)
            raise
        entry["status"] = response.status_code
        entry["sessionReceived"] = response.headers.get("mcp-session-id")
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def pause(what: str) -> None:
    """Tells the caller to act (`what`) and waits until it writes a line on stdin."""
    print(json.dumps({"pause": what}), flush=True)
    line = await anyio.to_thread.run_sync(sys.stdin.readline)
    if not line:
        raise RuntimeError(f"stdin closed while waiting for the caller to {what}")


async def over_http(url: str, second: str) -> None:
    headers = {}
    token = os.environ.get("HOOKS_MCP_TOKEN")
    if token:
        headers["authorization"] = f"Bearer {token}"
    router = Router(httpx2.URL(url), httpx2.URL(second))
    http = httpx2.AsyncClient(
        transport=router, headers=headers, timeout=httpx2.Timeout(REQUEST_S, read=300)
    )
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            if await step("initialize", lambda: initialize(session)) is None:
                return

            def publish(message):
                return lambda: call(session, "channel_publish", {"channel": CHANNEL, "message": message})

            await step("call before the restart", publish("before the restart"))
            await pause("restart")
            restarted = len(report["wire"])
            await step("call after the restart", publish("after the restart"))

            # The GET stream the SDK opened after `initialize` ended with the restart: does it
            # come back by itself (on the restarted daemon)?
            async def get_stream_back():
                while True:
                    gets = [e for e in report["wire"][restarted:] if e["http"] == "GET"]
                    if any(e.get("status") == 200 for e in gets):
                        return gets
                    await anyio.sleep(0.05)

            await step("GET stream reopened", get_stream_back)
            router.current = "second"
            await step(
                "call on the second daemon",
                lambda: call(session, "channel_read", {"channel": CHANNEL}),
            )

            async def tools():
                return [t.name for t in (await session.list_tools()).tools]

            await step("tools/list on the second daemon", tools)

            # The session ended elsewhere: a DELETE from outside the SDK, on the second daemon.
            async def end_elsewhere():
                sent = [e["sessionReceived"] for e in report["wire"] if e.get("sessionReceived")]
                async with httpx2.AsyncClient(headers=headers) as other:
                    response = await other.delete(second, headers={"mcp-session-id": sent[0]})
                return response.status_code

            await step("DELETE from elsewhere", end_elsewhere)
            await step("call after the session ended", publish("after the session ended"), may_fail=True)
            await step("second call after the session ended", publish("again"), may_fail=True)


async def main() -> int:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "stdio":
        run = lambda: over_stdio(argv[1], argv[2:])  # noqa: E731
    elif len(argv) == 3 and argv[0] == "http":
        run = lambda: over_http(argv[1], argv[2])  # noqa: E731
    else:
        print(__doc__, file=sys.stderr)
        return 2
    report["transport"] = argv[0]
    code = 0
    try:
        with anyio.fail_after(RUN_S):
            await run()
    except TimeoutError:
        report["failed"].append("time limit")
        report["steps"]["time limit"] = {"ok": False, "error": f"the run did not finish within {RUN_S} s"}
        code = 2
    except BaseException as error:  # noqa: BLE001 - the report says what broke the run
        report["failed"].append("driver")
        report["steps"]["driver"] = {"ok": False, "error": describe(error)}
        traceback.print_exc()
    if report["failed"] and code == 0:
        code = 1
    print(json.dumps(report), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(anyio.run(main))
