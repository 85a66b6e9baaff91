// Interop client on the official JavaScript SDK (@a2a-js/sdk, pinned in
// ../package.json):
//   node client_js.mjs BASE_URL [--skill ID] [--no-compat] [--rest] [--trace]
//
// The SDK's ClientFactory reads BASE_URL/.well-known/agent-card.json and picks
// the transport and protocol version from the card. By default the SDK's
// opt-in v0.3 compatibility layer is on (card resolver and JSON-RPC/REST
// transport factories), so a 0.3 card or a 0.3 interface gets its legacy
// transport; --no-compat uses the factory's defaults (A2A 1.0 only).
// --rest gives the factory only the REST (HTTP+JSON) transport factory, so
// the card must offer an HTTP+JSON interface. --trace logs every request the
// REST transport makes, and the answer chunk by chunk, to stderr.
// Same five operations and output line as clients/common.py: one JSON line
// {"card_url":..., "ops": {op: "ok" | "FAIL: ..."}} (plus "transport").
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver,
  JsonRpcTransportFactory, RestTransportFactory,
} from '@a2a-js/sdk/client';

const OPS = ['send', 'stream', 'get', 'cancel', 'multiturn'];
const OP_TIMEOUT_MS = 15000;
const MAX_STREAM_EVENTS = 200;

function parseArgs(argv) {
  const a = { base: '', skill: '', compat: true, rest: false, trace: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--skill') a.skill = argv[++i] ?? '';
    else if (argv[i] === '--no-compat') a.compat = false;
    else if (argv[i] === '--rest') a.rest = true;
    else if (argv[i] === '--trace') a.trace = true;
    else if (!a.base) a.base = argv[i];
    else throw new Error(`unexpected argument ${argv[i]}`);
  }
  if (!a.base) {
    throw new Error('usage: client_js.mjs BASE_URL [--skill ID] [--no-compat] [--rest] [--trace]');
  }
  return a;
}

// TaskState enum value -> lower-case word as in common.norm_state.
function stName(v) {
  const name = typeof v === 'number' ? TaskState[v] : String(v);
  return String(name ?? v).toLowerCase().replace(/^task_state_/, '').replaceAll('_', '-');
}

function texts(parts) {
  return (parts ?? [])
    .filter((p) => p?.content?.$case === 'text')
    .map((p) => p.content.value).join(' ');
}

function expect(cond, what) {
  if (!cond) throw new Error(what);
}

function withTimeout(promise, ms, what) {
  let t;
  const timer = new Promise((_, rej) => {
    t = setTimeout(() => rej(new Error(`TimeoutError: ${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([promise, timer]).finally(() => clearTimeout(t));
}

class JsClient {
  constructor(client, skill) {
    this.client = client;
    this.meta = skill ? { skillId: skill } : undefined;
  }

  request(text, taskId, contextId) {
    return {
      tenant: '',
      message: {
        messageId: randomUUID(), role: Role.ROLE_USER,
        parts: [{ content: { $case: 'text', value: text }, metadata: undefined,
          filename: '', mediaType: '' }],
        taskId: taskId ?? '', contextId: contextId ?? '',
        metadata: this.meta, extensions: [], referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    };
  }

  opts() {
    return { signal: AbortSignal.timeout(OP_TIMEOUT_MS) };
  }

  async send(text, taskId, contextId) {
    const r = await this.client.sendMessage(this.request(text, taskId, contextId), this.opts());
    if (r && 'messageId' in r) { // a Message, not a Task
      return ['', texts(r.parts), r.taskId, r.contextId];
    }
    const out = [texts(r.status?.message?.parts), ...(r.artifacts ?? []).map((a) => texts(a.parts))];
    return [stName(r.status?.state), out.filter(Boolean).join(' | '), r.id, r.contextId];
  }

  async stream(text) {
    let state = ''; let tid = ''; let ctx = ''; let n = 0;
    const out = [];
    for await (const ev of this.client.sendMessageStream(this.request(text), this.opts())) {
      if (++n > MAX_STREAM_EVENTS) break;
      const p = ev?.payload;
      if (!p) continue;
      const v = p.value;
      if (p.$case === 'message') {
        out.push(texts(v.parts)); tid = v.taskId; ctx = v.contextId;
      } else if (p.$case === 'task') {
        state = stName(v.status?.state); tid = v.id; ctx = v.contextId;
        out.push(texts(v.status?.message?.parts), ...(v.artifacts ?? []).map((a) => texts(a.parts)));
      } else if (p.$case === 'statusUpdate') {
        state = stName(v.status?.state); tid = v.taskId; ctx = v.contextId;
        out.push(texts(v.status?.message?.parts));
      } else if (p.$case === 'artifactUpdate') {
        out.push(texts(v.artifact?.parts));
      }
    }
    return [state, out.filter(Boolean).join(' | '), tid, ctx];
  }

  async get(taskId) {
    const t = await this.client.getTask({ tenant: '', id: taskId }, this.opts());
    return stName(t.status?.state);
  }

  async cancel(taskId) {
    const t = await this.client.cancelTask({ tenant: '', id: taskId, metadata: undefined }, this.opts());
    return stName(t.status?.state);
  }
}

// Mirrors clients/common.py run_ops: same checks, same messages.
// With skill (fleet mode) every echo must also carry "(by SKILL)" (the agent's
// own id: a prefix "name/" the fleet card may add is dropped).
async function runOps(c, skill) {
  const ops = {};
  const sent = {};
  const by = skill ? `(by ${skill.split('/').pop()})` : '';
  const fns = {
    async send() {
      const [st, text, tid] = await c.send('hello');
      expect(text.includes('echo: hello'), `no echo in reply (${JSON.stringify(st)}, ${JSON.stringify(text)})`);
      expect(text.includes(by), `answered by another agent (${JSON.stringify(text)})`);
      sent.tid = tid;
    },
    async stream() {
      const [st, text] = await c.stream('hello stream');
      expect(st === 'completed', `stream ended in state ${JSON.stringify(st)}`);
      expect(text.includes('echo: hello stream'), `no echo in stream (${JSON.stringify(text)})`);
      expect(text.includes(by), `answered by another agent (${JSON.stringify(text)})`);
    },
    async get() {
      expect(Boolean(sent.tid), 'no task id from send (message reply?)');
      const st = await c.get(sent.tid);
      expect(st === 'completed', `get: state ${JSON.stringify(st)}`);
    },
    async cancel() {
      const [st, text, tid] = await c.send('more please');
      expect(st === 'input-required', `first turn state ${JSON.stringify(st)}`);
      expect(text.includes(by), `answered by another agent (${JSON.stringify(text)})`);
      const st2 = await c.cancel(tid);
      expect(st2 === 'canceled', `cancel: state ${JSON.stringify(st2)}`);
    },
    async multiturn() {
      const [st, text0, tid, ctx] = await c.send('need more');
      expect(st === 'input-required', `first turn state ${JSON.stringify(st)}`);
      expect(text0.includes(by), `answered by another agent (${JSON.stringify(text0)})`);
      const [st2, text, tid2] = await c.send('done', tid, ctx);
      expect(st2 === 'completed', `second turn state ${JSON.stringify(st2)}`);
      expect(tid2 === tid, `second turn task id ${JSON.stringify(tid2)} != ${JSON.stringify(tid)}`);
      expect(text.includes('echo: done'), `second turn text ${JSON.stringify(text)}`);
      expect(text.includes(by), `answered by another agent (${JSON.stringify(text)})`);
    },
  };
  for (const op of OPS) {
    try {
      await withTimeout(fns[op](), OP_TIMEOUT_MS, op);
      ops[op] = 'ok';
    } catch (e) {
      const msg = `${e?.name ?? 'Error'}: ${e?.message ?? e}`.trim().split('\n')[0];
      ops[op] = 'FAIL: ' + msg.slice(0, 300);
      if (op === 'send') console.error(e);
    }
  }
  return ops;
}

// fetch that logs like common.TraceTransport: "> N METHOD PATH BODY",
// "< N STATUS TYPE", then "<< N CHUNK" per chunk of the answer (read from a
// clone, so the transport's own reading is untouched).
const TRACE_BODY = 2000;
let traceN = 0;
function traceLog(line) { process.stderr.write(line.trimEnd() + '\n'); }
async function tracingFetch(input, init = {}) {
  const n = ++traceN;
  const u = new URL(String(input));
  const body = typeof init.body === 'string' ? init.body : (init.body ? '(non-string body)' : '');
  traceLog(`> ${n} ${init.method ?? 'GET'} ${u.pathname}${u.search} ${body.slice(0, TRACE_BODY)}`);
  const r = await fetch(input, init);
  traceLog(`< ${n} ${r.status} ${r.headers.get('content-type') ?? ''}`);
  if (r.body) {
    const reader = r.clone().body.getReader();
    const dec = new TextDecoder();
    (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        traceLog(`<< ${n} ${dec.decode(value, { stream: true }).slice(0, TRACE_BODY)}`);
      }
    })().catch(() => {});
  }
  return r;
}

function report(cardUrl, ops, transport) {
  process.stdout.write(JSON.stringify({ card_url: cardUrl, ops, transport }) + '\n');
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let options = ClientFactoryOptions.default;
  const fetchImpl = a.trace ? tracingFetch : undefined;
  if (a.rest) {
    // Not createFrom(default, ...): that would merge JSON-RPC back in.
    const legacyCompat = { enabled: a.compat };
    options = {
      transports: [new RestTransportFactory({ legacyCompat, fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
    };
  } else if (a.compat) {
    const legacyCompat = { enabled: true };
    options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ legacyCompat }),
        new RestTransportFactory({ legacyCompat })],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
    });
  }
  let client;
  try {
    // The SDK resolves the card path relative to the base URL (WHATWG URL
    // rules), so ".../agents/v1" would lose "v1": give it a directory URL.
    const base = a.base.endsWith('/') ? a.base : `${a.base}/`;
    client = await withTimeout(new ClientFactory(options).createFromUrl(base), OP_TIMEOUT_MS, 'card');
  } catch (e) {
    const err = `FAIL: card: ${e?.name ?? 'Error'}: ${e?.message ?? e}`.split('\n')[0].slice(0, 300);
    console.error(e);
    report('', Object.fromEntries(OPS.map((o) => [o, err])), '');
    return;
  }
  const tr = client.transport;
  const url = tr.endpoint ?? tr.base?.endpoint ?? '';
  const transport = `${tr.protocolName} ${tr.protocolVersion}`;
  console.error(`client_js: ${a.base} -> ${transport} at ${url} (compat ${a.compat}, rest ${a.rest})`);
  report(url, await runOps(new JsClient(client, a.skill), a.skill), transport);
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
