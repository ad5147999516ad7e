// Drives one scenario with an official TypeScript MCP client against a hooks-mcp server and
// prints one JSON object with what it observed (tests/protocol/clients.rs asserts on it).
//
//   node run.mjs <scenario> stdio <server-binary> [server-args...]
//   node run.mjs <scenario> http <url>
//
// Scenarios:
//   modern  @modelcontextprotocol/client pinned to 2026-07-28: server/discover, tools,
//           resources, templates, completion, subscriptions/listen and a change made by
//           another process
//   auto    @modelcontextprotocol/client probing with server/discover ('auto', falling back
//           to initialize): the era it settles on, and tools on it
//   lazy    @modelcontextprotocol/client pinned to 2026-07-28 against a lazy server. stdio
//           (pass --lazy): find_tools, load_modules, the list_changed notification on the
//           subscription, the loaded tools listed and called. HTTP (a daemon with
//           HOOKS_MCP_MODE=lazy; no session to load modules into): find_tools, tools run
//           through call_tool, load_modules refused
//   legacy  @modelcontextprotocol/sdk 1.x: the initialize handshake, tools and resources
//
// Environment: every HOOKS_MCP_* and MCP_* variable is passed on to a stdio server (with the
// client's default safe environment); HOOKS_MCP_TOKEN is sent as the bearer token over HTTP;
// HOOKS_MCP_FULL_BIN and HOOKS_MCP_HOME name the operator command and the store that "another
// process" publishes through (`hooks-mcp-full channel publish`).
//
// The report: each step's value or error, the notifications the client's handlers received,
// the errors it reported through onerror, and what the transport carried (each response's
// method and resultType, each notification as sent).
//
// Exit status: 0 when every step succeeded, 1 when a step failed (the JSON says which and
// why), 2 on bad arguments or when the whole run overran its time limit.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const PROTOCOL = '2026-07-28';
const CHANNEL = 'client-tests';
const NEW_CHANNEL = 'client-tests-new';
const TEMPLATE = 'hooks://channels/{channel}';
/** How long a notification may take to arrive. */
const NOTIFICATION_MS = 10_000;
/** How long one request may take. */
const REQUEST_MS = 20_000;
/** How long the whole run may take. */
const RUN_MS = 90_000;

const [scenario, transportKind, target, ...serverArgs] = process.argv.slice(2);
const SCENARIOS = { modern, auto, lazy, legacy };
if (!SCENARIOS[scenario] || !['stdio', 'http'].includes(transportKind) || !target) {
    process.stderr.write(
        'usage: node run.mjs <modern|auto|lazy|legacy> stdio <server-binary> [args...]\n' +
            '       node run.mjs <modern|auto|lazy|legacy> http <url>\n'
    );
    process.exit(2);
}

const report = {
    scenario,
    transport: transportKind,
    client: null,
    steps: {},
    failed: [],
    notifications: [],
    clientErrors: [],
    wire: { responses: [], notifications: [] }
};

let finished = false;
function finish(code) {
    if (finished) return;
    finished = true;
    clearTimeout(watchdog);
    process.stdout.write(JSON.stringify(report) + '\n');
    if (report.failed.length > 0) {
        const first = report.failed[0];
        process.stderr.write(`run.mjs ${scenario} ${transportKind}: step ${first} failed: ${report.steps[first].error}\n`);
    }
    // Exit once stdout is flushed, whatever the client still holds open.
    process.stdout.write('', () => process.exit(code));
}

// Not unref'd: a client that hangs on a promise nothing will settle still gets its report out.
const watchdog = setTimeout(() => {
    report.failed.push('time limit');
    report.steps['time limit'] = { ok: false, error: `the run did not finish within ${RUN_MS} ms` };
    finish(2);
}, RUN_MS);

function describe(error) {
    if (!(error instanceof Error)) return String(error);
    let text = `${error.name}: ${error.message}`;
    if (error.code !== undefined) text += ` (code ${JSON.stringify(error.code)})`;
    if (error.data !== undefined) text += ` data ${JSON.stringify(error.data)}`;
    return text;
}

/** Runs one step, recording its value or its error; returns the value (undefined on failure). */
async function step(name, body) {
    try {
        const value = await body();
        report.steps[name] = { ok: true, value: value ?? null };
        return value;
    } catch (error) {
        report.steps[name] = { ok: false, error: describe(error) };
        report.failed.push(name);
        return undefined;
    }
}

/** Records every message the transport carries, so the test can see wire fields the client strips. */
function tap(transport) {
    const methods = new Map();
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
        if (message && message.method && message.id !== undefined) methods.set(String(message.id), message.method);
        return send(message, options);
    };
    let handler;
    const wrapped = (message, extra) => {
        if (message && message.id !== undefined && message.method === undefined) {
            const entry = { id: message.id, method: methods.get(String(message.id)) ?? null };
            if (message.result !== undefined) {
                entry.resultType = message.result.resultType ?? null;
                entry.keys = Object.keys(message.result);
                if (typeof message.result.protocolVersion === 'string') entry.protocolVersion = message.result.protocolVersion;
            } else {
                entry.error = message.error ?? null;
            }
            report.wire.responses.push(entry);
        } else if (message && message.method !== undefined && message.id === undefined) {
            report.wire.notifications.push({ method: message.method, params: message.params ?? null });
        }
        return handler?.(message, extra);
    };
    Object.defineProperty(transport, 'onmessage', {
        configurable: true,
        get: () => (handler ? wrapped : undefined),
        set: h => {
            if (h !== wrapped) handler = h;
        }
    });
    return transport;
}

function serverEnv(defaults) {
    const env = { ...defaults };
    for (const [key, value] of Object.entries(process.env)) {
        if (key.startsWith('HOOKS_MCP_') || key.startsWith('MCP_')) env[key] = value;
    }
    return env;
}

function httpOptions() {
    const token = process.env.HOOKS_MCP_TOKEN;
    return token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {};
}

/** The installed version of a package (read from its folder: export maps hide package.json). */
function packageVersion(name) {
    return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
}

/** Publishes from another process: the operator command on the same store. */
function publishElsewhere(channel, text) {
    const bin = process.env.HOOKS_MCP_FULL_BIN;
    if (!bin || !process.env.HOOKS_MCP_HOME) throw new Error('HOOKS_MCP_FULL_BIN and HOOKS_MCP_HOME must name the operator command and the store');
    const run = spawnSync(bin, ['channel', 'publish', channel, text], { env: process.env, encoding: 'utf8', timeout: REQUEST_MS });
    if (run.status !== 0) throw new Error(`${bin} channel publish exited with ${run.status}: ${run.stderr}`);
    return run.stdout.trim();
}

/** Notifications the handlers saw, and a way to wait for one. */
const waiters = [];
function heard(method, params) {
    report.notifications.push({ method, params: params ?? null });
    for (const w of [...waiters]) {
        if (w.match(method, params)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve({ method, params: params ?? null });
        }
    }
}
function waitFor(what, match, ms = NOTIFICATION_MS) {
    const seen = report.notifications.find(n => match(n.method, n.params));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
        const waiter = { match, resolve };
        waiters.push(waiter);
        setTimeout(() => {
            const i = waiters.indexOf(waiter);
            if (i >= 0) {
                waiters.splice(i, 1);
                const got = report.notifications.map(n => n.method).join(', ') || 'none';
                reject(new Error(`no ${what} within ${ms} ms (notifications heard: ${got})`));
            }
        }, ms);
    });
}

function toolResult(result) {
    if (result.isError) throw new Error(`the tool answered isError: ${JSON.stringify(result.content)}`);
    return { content: result.content, structuredContent: result.structuredContent ?? null };
}

/** A message to one session (`channel_publish`'s `to`), then `channel_read` as that session
 *  and as another: `call(name, args)` is the era's tool call. */
async function oneToOne(call) {
    const to = 'one-to-one-recipient';
    await step('channel_publish to', async () =>
        toolResult(await call('channel_publish', { channel: CHANNEL, message: `only for ${to}`, to }))
    );
    await step('channel_read as the recipient', async () =>
        toolResult(await call('channel_read', { channel: CHANNEL, session_id: to }))
    );
    await step('channel_read as another session', async () =>
        toolResult(await call('channel_read', { channel: CHANNEL, session_id: 'another-session' }))
    );
}

function readValue(read) {
    const text = read.contents?.[0]?.text;
    return { contents: read.contents, value: typeof text === 'string' ? JSON.parse(text) : null };
}

// ---------------------------------------------------------------------------------------------
// @modelcontextprotocol/client (2.x)

async function modernClient(mode) {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/client/stdio');
    report.client = { package: '@modelcontextprotocol/client', version: packageVersion('@modelcontextprotocol/client'), negotiation: mode };
    const client = new Client({ name: 'hooks-mcp-client-tests', version: '1.0.0' }, { versionNegotiation: { mode } });
    for (const method of [
        'notifications/tools/list_changed',
        'notifications/resources/list_changed',
        'notifications/resources/updated',
        'notifications/message'
    ]) {
        client.setNotificationHandler(method, n => heard(n.method, n.params));
    }
    client.onerror = error => report.clientErrors.push(describe(error));
    const transport =
        transportKind === 'stdio'
            ? new StdioClientTransport({ command: target, args: serverArgs, env: serverEnv(getDefaultEnvironment()), stderr: 'inherit' })
            : new StreamableHTTPClientTransport(new URL(target), httpOptions());
    tap(transport);
    const connected = await step('connect', async () => {
        await client.connect(transport, { timeout: REQUEST_MS });
        return {
            era: client.getProtocolEra() ?? null,
            protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
            serverVersion: client.getServerVersion() ?? null,
            capabilities: client.getServerCapabilities() ?? null,
            discover: client.getDiscoverResult() ?? null,
            instructions: client.getInstructions() ?? null
        };
    });
    return { client, connected: connected !== undefined };
}

const opts = { timeout: REQUEST_MS };
/** The open subscription (kept out of the report). */
const live = { subscription: undefined };

async function modern() {
    const { client, connected } = await modernClient({ pin: PROTOCOL });
    if (!connected) return client;
    const uri = `hooks://channels/${CHANNEL}`;
    await step('tools/list', async () => (await client.listTools(undefined, opts)).tools.map(t => t.name));
    await step('channel_publish', async () =>
        toolResult(await client.callTool({ name: 'channel_publish', arguments: { channel: CHANNEL, message: `published by the 2.x client over ${transportKind}` } }, opts))
    );
    await step('channel_list', async () => toolResult(await client.callTool({ name: 'channel_list', arguments: {} }, opts)));
    await step('resources/list', async () => (await client.listResources(undefined, opts)).resources);
    await step('resources/templates/list', async () => (await client.listResourceTemplates(undefined, opts)).resourceTemplates);
    await step('resources/read', async () => readValue(await client.readResource({ uri }, opts)));
    await oneToOne((name, args) => client.callTool({ name, arguments: args }, opts));
    await step('completion/complete', async () =>
        (await client.complete({ ref: { type: 'ref/resource', uri: TEMPLATE }, argument: { name: 'channel', value: CHANNEL.slice(0, 8) } }, opts))
            .completion
    );
    const subscription = await step('subscriptions/listen', async () => {
        const s = await client.listen({ toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: [uri] }, opts);
        live.subscription = s;
        return { honoredFilter: s.honoredFilter };
    });
    if (subscription === undefined) return client;
    // Let the server's watcher take its first look before the other process writes.
    await new Promise(r => setTimeout(r, 500));
    await step('publish from another process', async () => {
        publishElsewhere(CHANNEL, 'published by another process');
        publishElsewhere(NEW_CHANNEL, 'a channel that did not exist');
        return null;
    });
    await step('notifications/resources/updated', () =>
        waitFor(`notifications/resources/updated for ${uri}`, (m, p) => m === 'notifications/resources/updated' && p?.uri === uri)
    );
    await step('notifications/resources/list_changed', () =>
        waitFor('notifications/resources/list_changed', m => m === 'notifications/resources/list_changed')
    );
    await step('resources/read after', async () => readValue(await client.readResource({ uri }, { ...opts, cacheMode: 'refresh' })));
    await step('subscription close', async () => {
        await live.subscription.close();
        return await live.subscription.closed;
    });
    return client;
}

async function auto() {
    const { client, connected } = await modernClient('auto');
    if (!connected) return client;
    await step('tools/list', async () => (await client.listTools(undefined, opts)).tools.map(t => t.name));
    await step('channel_publish', async () =>
        toolResult(
            await client.callTool({ name: 'channel_publish', arguments: { channel: CHANNEL, message: `published by the 2.x client (auto) over ${transportKind}` } }, opts)
        )
    );
    await step('channel_list', async () => toolResult(await client.callTool({ name: 'channel_list', arguments: {} }, opts)));
    return client;
}

async function lazy() {
    const { client, connected } = await modernClient({ pin: PROTOCOL });
    if (!connected) return client;
    const list = async () => (await client.listTools(undefined, { ...opts, cacheMode: 'refresh' })).tools.map(t => t.name);
    await step('tools/list', list);
    if (transportKind === 'http') {
        // A 2026-07-28 request over HTTP carries no session for load_modules to extend: the
        // lazy list offers call_tool, which runs any tool by name, instead.
        await step('find_tools', async () => toolResult(await client.callTool({ name: 'find_tools', arguments: { query: 'publish broadcast' } }, opts)));
        const through = (name, args) =>
            step(`call_tool ${name}`, async () => toolResult(await client.callTool({ name: 'call_tool', arguments: { name, arguments: args } }, opts)));
        await through('channel_publish', { channel: CHANNEL, message: 'published through call_tool' });
        await through('channel_list', {});
        await step('load_modules refused', async () => {
            const result = await client.callTool({ name: 'load_modules', arguments: { modules: ['channels'] } }, opts);
            if (!result.isError) throw new Error(`load_modules was not refused: ${JSON.stringify(result.content)}`);
            return { content: result.content };
        });
        await step('tools/list after', list);
        return client;
    }
    const subscription = await step('subscriptions/listen', async () => {
        const s = await client.listen({ toolsListChanged: true }, opts);
        live.subscription = s;
        return { honoredFilter: s.honoredFilter };
    });
    await step('find_tools', async () => toolResult(await client.callTool({ name: 'find_tools', arguments: { query: 'broadcast channel' } }, opts)));
    await step('load_modules', async () => toolResult(await client.callTool({ name: 'load_modules', arguments: { modules: ['channels'] } }, opts)));
    if (subscription !== undefined) {
        await step('notifications/tools/list_changed', () =>
            waitFor('notifications/tools/list_changed', m => m === 'notifications/tools/list_changed')
        );
    }
    await step('tools/list after', list);
    await step('channel_publish', async () =>
        toolResult(await client.callTool({ name: 'channel_publish', arguments: { channel: CHANNEL, message: 'published after load_modules' } }, opts))
    );
    if (subscription !== undefined) {
        await step('subscription close', async () => {
            await live.subscription.close();
            return await live.subscription.closed;
        });
    }
    return client;
}

// ---------------------------------------------------------------------------------------------
// @modelcontextprotocol/sdk (1.x)

async function legacy() {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    report.client = { package: '@modelcontextprotocol/sdk', version: packageVersion('@modelcontextprotocol/sdk') };
    const client = new Client({ name: 'hooks-mcp-client-tests', version: '1.0.0' });
    client.onerror = error => report.clientErrors.push(describe(error));
    const transport =
        transportKind === 'stdio'
            ? new StdioClientTransport({ command: target, args: serverArgs, env: serverEnv(getDefaultEnvironment()), stderr: 'inherit' })
            : new StreamableHTTPClientTransport(new URL(target), httpOptions());
    tap(transport);
    const connected = await step('connect', async () => {
        await client.connect(transport, { timeout: REQUEST_MS });
        return {
            protocolVersion: report.wire.responses.find(r => r.method === 'initialize')?.protocolVersion ?? null,
            serverVersion: client.getServerVersion() ?? null,
            capabilities: client.getServerCapabilities() ?? null
        };
    });
    if (connected === undefined) return client;
    const uri = `hooks://channels/${CHANNEL}`;
    await step('tools/list', async () => (await client.listTools(undefined, opts)).tools.map(t => t.name));
    await step('channel_publish', async () =>
        toolResult(await client.callTool({ name: 'channel_publish', arguments: { channel: CHANNEL, message: `published by the 1.x SDK over ${transportKind}` } }, undefined, opts))
    );
    await step('channel_list', async () => toolResult(await client.callTool({ name: 'channel_list', arguments: {} }, undefined, opts)));
    await step('resources/list', async () => (await client.listResources(undefined, opts)).resources);
    await step('resources/templates/list', async () => (await client.listResourceTemplates(undefined, opts)).resourceTemplates);
    await step('resources/read', async () => readValue(await client.readResource({ uri }, opts)));
    await oneToOne((name, args) => client.callTool({ name, arguments: args }, undefined, opts));
    return client;
}

// ---------------------------------------------------------------------------------------------

let client;
try {
    client = await SCENARIOS[scenario]();
} catch (error) {
    report.failed.push('driver');
    report.steps.driver = { ok: false, error: describe(error) };
}
try {
    await Promise.race([client?.close(), new Promise(r => setTimeout(r, 5_000))]);
} catch (error) {
    report.clientErrors.push(`close: ${describe(error)}`);
}
finish(report.failed.length > 0 ? 1 : 0);
