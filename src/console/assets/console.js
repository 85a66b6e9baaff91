// a2a-gateway console (issue #68; contract: docs/console.md).
//
// A plain ES module with no dependencies, served under a strict CSP. Every value
// from the gateway or an agent is put into the page as text (textContent or text
// nodes made by createElement); nothing is ever parsed as markup, and no style is
// set from here: looks come from classes in console.css and the `hidden` attribute.
// Credentials are typed for one request and kept nowhere (no storage, no cookies).

const VIEWS = ['fleet', 'skills', 'calls', 'try', 'limits'];
const POLL_MS = 3000;
const MATCH_DEBOUNCE_MS = 300;
const MAX_CALL_ROWS = 300;
const TRY_TIMEOUT_MS = 5 * 60 * 1000;

const state = {
  view: null,
  config: null,
  fleet: null,
  skills: null,
  signingIn: false,
  poll: null,         // {timer, view}
  calls: [],          // newest first
  callIds: new Set(),
  stream: null,       // EventSource of /admin/calls/stream
  paused: false,
  callsSeq: 0,
  matchSeq: 0,
  matchTimer: null,
  matchAbort: null,
  tryAbort: null,
};

// ---------------------------------------------------------------- DOM helpers

const $ = (sel, root = document) => root.querySelector(sel);

// h('td', {class: 'x'}, 'text', child, ...): builds elements; strings become text.
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      const low = k.toLowerCase();
      if (low.startsWith('on') || low === 'style' || low.endsWith('html')) {
        throw new Error(`refused property ${k}`);
      }
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = String(v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'events') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  add(el, children);
  return el;
}

function add(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function fill(el, ...children) {
  el.replaceChildren();
  return add(el, children);
}

// Any value as plain text; objects (a card field need not be a string) as JSON.
function text(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'object') {
    try {
      return JSON.stringify(v);
    } catch (_) {
      return String(v);
    }
  }
  return String(v);
}

function dash(v) {
  return v === undefined || v === null || v === '' ? '—' : text(v);
}

function num(v, digits = 0) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  return v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function pct(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  return `${(v * 100).toLocaleString('en-US', { maximumFractionDigits: 1 })} %`;
}

const GOOD = new Set(['closed', 'fresh', 'valid', 'up', 'ready', 'complete', 'completed', 'ok', 'live', 'on', 'none']);
const WARN = new Set(['half_open', 'half-open', 'stale', 'starting', 'reconnecting', 'degraded', 'paused', 'local',
  'working', 'submitted', 'canceled', 'cancelled', 'waiting for upstream cards', 'connecting']);
const BAD = new Set(['open', 'missing', 'invalid', 'down', 'failed', 'error', 'offline', 'rejected', 'unsigned', 'unknown_kid', 'stopping', 'draining']);

function tone(value) {
  const v = text(value).toLowerCase().replace(/^task_state_/, '');
  if (GOOD.has(v)) return 'ok';
  if (WARN.has(v)) return 'warn';
  if (BAD.has(v)) return 'bad';
  return 'neutral';
}

function badge(value, label, kind) {
  const t = kind || tone(value);
  return h('span', { class: `badge badge-${t}` }, label === undefined ? dash(value) : label);
}

function statusBadge(status) {
  let t = 'neutral';
  if (typeof status === 'number') {
    if (status >= 200 && status < 300) t = 'ok';
    else if (status >= 400 && status < 500) t = 'warn';
    else if (status >= 500) t = 'bad';
  }
  return badge(status, dash(status), t);
}

function chip(v, cls = '') {
  return h('span', { class: `chip ${cls}`.trim() }, text(v));
}

// A bar for a use (lower is better: turns amber, then red) or a score (plain).
function meter(value, max, kind = 'use') {
  if (typeof value !== 'number' || typeof max !== 'number' || max <= 0) return null;
  const props = { class: 'meter', min: '0', max: String(max), value: String(Math.min(value, max)) };
  if (kind === 'use') Object.assign(props, { low: String(max * 0.6), high: String(max * 0.85), optimum: '0' });
  return h('meter', props);
}

function plural(n, word) {
  return `${num(n)} ${word}${n === 1 ? '' : 's'}`;
}

function clock(d = new Date()) {
  return d.toLocaleTimeString('en-GB', { hour12: false });
}

function callTime(at) {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return text(at);
  const ms = String(d.getMilliseconds()).padStart(3, '0');
  return `${clock(d)}.${ms}`;
}

function viewSection(name) {
  return document.getElementById(`view-${name}`);
}

function setViewError(name, err) {
  const el = $('.view-error', viewSection(name));
  if (!el) return;
  if (err) {
    el.textContent = err instanceof Error ? err.message : text(err);
    el.hidden = false;
  } else {
    el.textContent = '';
    el.hidden = true;
  }
}

function setGlobalError(err) {
  const el = $('#global-error');
  el.textContent = err ? (err instanceof Error ? err.message : text(err)) : '';
  el.hidden = !err;
}

// ------------------------------------------------------------------ ids, base64

function uuid() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function base64Utf8(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const x of bytes) bin += String.fromCharCode(x);
  return btoa(bin);
}

// ------------------------------------------------------------------------ API

class SignInNeeded extends Error {
  constructor() {
    super('sign-in needed');
    this.name = 'SignInNeeded';
  }
}

async function errorText(res) {
  let msg = `${res.status} ${res.statusText}`.trim();
  try {
    const body = await res.json();
    if (body && body.error !== undefined) {
      msg += `: ${typeof body.error === 'string' ? body.error : JSON.stringify(body.error)}`;
    }
  } catch (_) {
    // not JSON: the status says enough
  }
  return msg;
}

// Reads a 401 body; when it asks to sign in, shows the form and throws.
async function checkSignIn(res) {
  if (res.status !== 401) return;
  let body = null;
  try {
    body = await res.clone().json();
  } catch (_) {
    body = null;
  }
  if (body && body.sign_in === true) {
    showSignIn(body);
    throw new SignInNeeded();
  }
}

async function api(path, opts = {}) {
  const res = await fetch(path, {
    credentials: 'same-origin',
    cache: 'no-store',
    ...opts,
    headers: { accept: 'application/json', ...(opts.headers || {}) },
  });
  await checkSignIn(res);
  if (!res.ok) throw new Error(`${path}: ${await errorText(res)}`);
  return res.json();
}

function quiet(promise, view) {
  return promise.catch((err) => {
    if (err instanceof SignInNeeded || (err && err.name === 'AbortError')) return;
    if (view) setViewError(view, err);
    else setGlobalError(err);
  });
}

// --------------------------------------------------------------------- header

function renderHeader() {
  const cfg = state.config || {};
  $('#gw-public').textContent = dash(cfg.public_url);
  $('#gw-public-wrap').hidden = !cfg.public_url;
  $('#sign-out').hidden = cfg.console_auth !== true;
  if (cfg.name) $('.brand-name').textContent = text(cfg.name);
  const fleet = state.fleet;
  const st = $('#gw-status');
  const gen = $('#gw-generation');
  if (fleet && fleet.status !== undefined) {
    st.className = `badge badge-${tone(fleet.status)}`;
    st.textContent = text(fleet.status);
    st.hidden = false;
    gen.textContent = fleet.generation !== undefined ? `config generation ${text(fleet.generation)}` : '';
    gen.hidden = fleet.generation === undefined;
  }
}

async function loadConfig() {
  state.config = await api('/admin/config');
  renderHeader();
  setupTryForm();
}

// ---------------------------------------------------------------------- fleet

function agentNames() {
  const agents = (state.fleet && Array.isArray(state.fleet.agents)) ? state.fleet.agents : [];
  return agents.map((a) => text(a.name));
}

async function loadFleet() {
  const fleet = await api('/admin/fleet');
  state.fleet = fleet;
  renderHeader();
  renderFleet();
  refreshAgentLists();
  const sec = viewSection('fleet');
  sec.dataset.loads = String(Number(sec.dataset.loads || '0') + 1);
  $('#fleet-updated').textContent = `updated ${clock()} · every ${POLL_MS / 1000} s`;
  setViewError('fleet', null);
}

function bindingLabel(b) {
  const v = text(b);
  if (v.toUpperCase() === 'JSONRPC') return 'JSON-RPC';
  if (v.toUpperCase() === 'GRPC') return 'gRPC';
  return v;
}

function renderFleet() {
  const agents = (state.fleet && Array.isArray(state.fleet.agents)) ? state.fleet.agents : [];
  let replicas = 0; let open = 0; let half = 0; let calls = 0; let errors = 0; let inflight = 0;
  let fresh = 0;
  for (const a of agents) {
    for (const r of a.replicas || []) {
      replicas += 1;
      if (r.state === 'open') open += 1;
      if (r.state === 'half_open') half += 1;
    }
    if (a.card && a.card.state === 'fresh') fresh += 1;
    if (a.last_minute) {
      calls += Number(a.last_minute.calls) || 0;
      errors += Number(a.last_minute.errors) || 0;
    }
    inflight += Number(a.in_flight) || 0;
  }
  const stat = (label, value, t) => h('div', { class: `stat ${t ? `stat-${t}` : ''}`.trim() },
    h('div', { class: 'stat-value' }, value), h('div', { class: 'stat-label' }, label));
  fill($('#fleet-summary'),
    stat('agents', num(agents.length)),
    stat('cards fresh', `${num(fresh)} / ${num(agents.length)}`, fresh < agents.length ? 'warn' : null),
    stat('replicas', num(replicas)),
    stat('breakers open', num(open), open ? 'bad' : null),
    stat('half open', num(half), half ? 'warn' : null),
    stat('in flight', num(inflight)),
    stat('calls, last minute', num(calls)),
    stat('errors, last minute', num(errors), errors ? 'bad' : null));

  const rows = agents.map((a) => {
    const card = a.card || {};
    const agentCell = h('td', { class: 'cell-agent' },
      h('div', { class: 'agent-name' }, text(a.name)),
      card.name ? h('div', { class: 'agent-card-name' }, text(card.name)) : null,
      card.description ? h('div', { class: 'clip muted small' }, text(card.description)) : null,
      (a.urls || []).map((u) => h('div', { class: 'mono small muted' }, text(u))));

    const flags = [];
    if (card.streaming === true) flags.push(chip('streaming'));
    if (card.push_notifications === true) flags.push(chip('push'));
    const cardCell = h('td', null,
      badge(card.state, dash(card.state)),
      typeof card.age_seconds === 'number' ? h('span', { class: 'muted small gap' }, `${num(card.age_seconds)} s old`) : null,
      flags.length ? h('div', { class: 'chips' }, flags) : null,
      card.last_error ? h('div', { class: 'error-text small' }, text(card.last_error)) : null);

    const versions = a.versions && typeof a.versions === 'object' ? a.versions : {};
    const versionCell = h('td', null,
      Object.entries(versions).map(([binding, vs]) => h('div', { class: 'vrow' },
        h('span', { class: 'binding' }, bindingLabel(binding)),
        (Array.isArray(vs) ? vs : [vs]).map((v) => chip(v, 'chip-version')))),
      a.versions_from ? h('div', { class: 'muted small' }, `from ${text(a.versions_from)}`) : null);

    const sig = a.card_signature;
    const sigCell = h('td', null,
      sig ? [
        badge(sig.state, dash(sig.state)),
        h('div', { class: 'muted small' }, `mode ${dash(sig.mode)}`, sig.kid ? ` · kid ${text(sig.kid)}` : ''),
      ] : h('span', { class: 'muted' }, 'not checked'));

    const repCell = h('td', { class: 'cell-replicas' },
      (a.replicas || []).map((r) => h('div', { class: 'replica' },
        badge(r.state, dash(r.state)),
        h('span', { class: 'mono small replica-url' }, text(r.url)),
        typeof r.outstanding === 'number' ? h('span', { class: 'muted small nowrap' }, `${num(r.outstanding)} out`) : null)));

    const inflightCell = h('td', { class: 'num' },
      h('div', null, `${num(a.in_flight)} / ${num(a.max_in_flight)}`),
      meter(a.in_flight, a.max_in_flight));

    const lm = a.last_minute || {};
    const lmCell = h('td', { class: 'num' },
      h('div', null, plural(lm.calls, 'call')),
      h('div', { class: lm.errors ? 'error-text' : 'muted' }, `${plural(lm.errors, 'error')} · ${pct(lm.error_rate)}`),
      h('div', { class: 'muted small' }, `${num(lm.per_second, 2)}/s over ${num(lm.seconds)} s`));

    return h('tr', { dataset: { agent: text(a.name) } },
      agentCell, cardCell, versionCell, sigCell, repCell, inflightCell, lmCell);
  });
  if (!rows.length) rows.push(h('tr', null, h('td', { colspan: '7', class: 'empty' }, 'No agents configured.')));
  fill($('#fleet-rows'), rows);
}

function refreshAgentLists() {
  const names = agentNames();
  for (const [sel, first] of [['#calls-agent', 'all agents'], ['#try-target', null]]) {
    const el = $(sel);
    const current = el.value;
    const have = Array.from(el.options).slice(1).map((o) => o.value);
    if (have.length === names.length && have.every((n, i) => n === names[i])) continue;
    const keep = el.options[0];
    el.replaceChildren(keep);
    for (const n of names) {
      el.append(h('option', { value: n }, first ? n : `${n} only (/agents/${n}/)`));
    }
    el.value = names.includes(current) ? current : '';
  }
}

// --------------------------------------------------------------------- skills

async function loadSkills() {
  state.skills = await api('/admin/skills');
  renderSkills();
  refreshSkillList();
  setViewError('skills', null);
}

function renderSkills() {
  const data = state.skills || {};
  const skills = Array.isArray(data.skills) ? data.skills : [];
  const routing = data.routing || {};
  $('#skills-count').textContent = `${skills.length} published`;
  const match = routing.match || {};
  const kv = (k, v) => h('span', { class: 'kv-item' }, h('span', { class: 'kv-key' }, k), h('span', { class: 'kv-val' }, v));
  fill($('#skills-routing'),
    kv('default agent', dash(routing.default_upstream)),
    kv('skill header', dash(routing.skill_header)),
    kv('metadata keys', Array.isArray(routing.metadata_keys) && routing.metadata_keys.length ? routing.metadata_keys.map(text).join(', ') : '—'),
    kv('text match', match.enabled === true
      ? `on, min score ${num(match.min_score, 2)}${typeof match.margin === 'number' ? `, margin ${num(match.margin, 2)}` : ''}`
      : 'off'));

  const rows = skills.map((s) => h('tr', { dataset: { skill: text(s.id) } },
    h('td', null, h('code', { class: 'skill-id' }, text(s.id))),
    h('td', { class: 'cell-wide' },
      h('div', { class: 'strong' }, dash(s.name)),
      s.description ? h('div', { class: 'muted small' }, text(s.description)) : null),
    h('td', { class: 'nowrap' }, dash(s.owner)),
    h('td', null, h('div', { class: 'chips' }, (s.tags || []).map((t) => chip(t)))),
    h('td', { class: 'cell-wide' }, (s.examples || []).length
      ? h('ul', { class: 'examples' }, (s.examples || []).map((e) => h('li', null, text(e))))
      : h('span', { class: 'muted' }, '—'))));
  if (!rows.length) rows.push(h('tr', null, h('td', { colspan: '5', class: 'empty' }, 'No agent publishes a skill.')));
  fill($('#skills-rows'), rows);
}

function scheduleMatch() {
  clearTimeout(state.matchTimer);
  state.matchTimer = setTimeout(() => quiet(runMatch(), 'skills'), MATCH_DEBOUNCE_MS);
}

async function runMatch() {
  const q = $('#match-text').value.trim();
  const seq = ++state.matchSeq;
  if (state.matchAbort) state.matchAbort.abort();
  if (!q) {
    renderMatch(null);
    return;
  }
  const ctl = new AbortController();
  state.matchAbort = ctl;
  const res = await api(`/admin/skills/match?text=${encodeURIComponent(q)}`, { signal: ctl.signal });
  if (seq !== state.matchSeq) return;
  renderMatch(res);
  setViewError('skills', null);
}

function renderMatch(res) {
  const picked = $('#match-picked');
  const table = $('#match-scores');
  if (!res) {
    picked.className = 'match-picked muted';
    picked.textContent = 'Type a sentence to see the scores.';
    table.hidden = true;
    return;
  }
  if (res.picked) {
    picked.className = 'match-picked';
    fill(picked, 'Routing would pick ', h('code', { class: 'picked-skill' }, text(res.picked.skill)),
      ' on ', h('strong', null, dash(res.picked.owner)),
      h('span', { class: 'muted' }, ` · score ${num(res.picked.score, 3)}`,
        typeof res.picked.runner_up === 'number' ? ` · runner-up ${num(res.picked.runner_up, 3)}` : ''));
  } else {
    picked.className = 'match-picked muted';
    const routing = (state.skills && state.skills.routing) || {};
    fill(picked, 'No skill scores enough',
      routing.default_upstream ? ` · the default agent (${text(routing.default_upstream)}) would get it` : '');
  }
  const scores = Array.isArray(res.scores) ? res.scores : [];
  const top = res.picked ? text(res.picked.skill) : null;
  fill($('#match-rows'), scores.map((s) => h('tr', { class: text(s.skill) === top ? 'row-picked' : '' },
    h('td', null, h('code', null, text(s.skill))),
    h('td', null, dash(s.owner)),
    h('td', { class: 'num' }, num(s.score, 3)),
    h('td', { class: 'bar-col' }, meter(typeof s.score === 'number' ? s.score : 0, 1, 'score')))));
  table.hidden = scores.length === 0;
}

// ---------------------------------------------------------------------- calls

function callFilters() {
  return {
    upstream: $('#calls-agent').value,
    status: $('#calls-status').value,
    caller: $('#calls-caller').value.trim(),
  };
}

function callMatches(c, f) {
  if (f.upstream && text(c.upstream) !== f.upstream) return false;
  if (f.status) {
    const s = Number(c.status);
    if (/^[1-5]xx$/.test(f.status)) {
      if (Math.floor(s / 100) !== Number(f.status[0])) return false;
    } else if (String(s) !== f.status) return false;
  }
  if (f.caller && !text(c.caller).includes(f.caller)) return false;
  return true;
}

// The gateway's request ids share a per-process prefix and end in a
// counter: the end is what tells two calls apart (the whole id is the
// row's title).
function shortId(id) {
  const v = text(id);
  return v.length > 13 ? `…${v.slice(-8)}` : dash(v);
}

function callRow(c, fresh) {
  const versions = [text(c.binding), text(c.version)].filter(Boolean).join(' · ');
  const agentVersion = c.agent_version && c.agent_version !== c.version ? ` → ${text(c.agent_version)}` : '';
  const err = text(c.error);
  return h('tr', { class: fresh ? 'row-new' : '', dataset: { status: text(c.status), upstream: text(c.upstream) } },
    h('td', { class: 'mono nowrap', title: text(c.at) }, callTime(c.at)),
    h('td', { class: 'call-agent strong' }, dash(c.upstream)),
    h('td', { class: 'mono nowrap' }, dash(c.method)),
    h('td', { class: 'nowrap' }, versions + agentVersion),
    h('td', { class: 'mono nowrap' }, dash(c.skill)),
    h('td', { class: 'call-status' }, statusBadge(c.status)),
    h('td', { class: 'nowrap' }, err && err !== 'none' ? h('span', { class: 'error-text' }, err, c.code !== null && c.code !== undefined ? ` (${text(c.code)})` : '') : h('span', { class: 'muted' }, dash(err))),
    h('td', { class: 'num' }, num(c.duration_ms, 1)),
    h('td', null, badge(c.outcome, dash(c.outcome))),
    h('td', { class: 'clip-cell' }, h('div', null, dash(c.caller)),
      c.client ? h('div', { class: 'mono small muted' }, text(c.client)) : null),
    h('td', {
      class: 'mono small nowrap',
      title: `request ${dash(c.request_id)}${c.trace_id ? ` · trace ${text(c.trace_id)}` : ''}`,
    }, shortId(c.request_id)));
}

function renderCallsCount(capacity) {
  const n = $('#calls-rows').children.length;
  $('#calls-count').textContent = `${n} shown${typeof capacity === 'number' ? ` · ring of ${num(capacity)}` : ''}`;
  $('#calls-empty').hidden = n > 0;
}

async function loadCalls() {
  const f = callFilters();
  const seq = ++state.callsSeq;
  const q = new URLSearchParams({ upstream: f.upstream, status: f.status, caller: f.caller, limit: '100' });
  const res = await api(`/admin/calls?${q}`);
  if (seq !== state.callsSeq) return;
  state.calls = Array.isArray(res.calls) ? res.calls.slice(0, MAX_CALL_ROWS) : [];
  state.callIds = new Set(state.calls.map((c) => text(c.request_id)).filter(Boolean));
  state.capacity = res.capacity;
  fill($('#calls-rows'), state.calls.map((c) => callRow(c, false)));
  const rec = $('#calls-recording');
  if (res.recording === false) {
    rec.textContent = 'Recording is off: calls are recorded while someone looks, from now on.';
    rec.hidden = false;
  } else {
    rec.hidden = true;
  }
  renderCallsCount(res.capacity);
  setViewError('calls', null);
}

function setLive(label) {
  const el = $('#calls-live');
  el.textContent = label;
  el.className = `badge badge-${tone(label)}`;
}

function openStream() {
  closeStream();
  const es = new EventSource('/admin/calls/stream');
  state.stream = es;
  setLive('connecting');
  es.addEventListener('open', () => setLive(state.paused ? 'paused' : 'live'));
  es.addEventListener('call', (e) => {
    let c;
    try {
      c = JSON.parse(e.data);
    } catch (_) {
      return;
    }
    onCall(c);
  });
  es.addEventListener('error', () => {
    if (state.stream !== es) return;
    setLive(es.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting');
    // A lost session answers 401: one small read tells, and shows the sign-in form.
    quiet(api('/admin/calls?limit=1').then(() => {
      if (es.readyState === EventSource.CLOSED && state.stream === es && state.view === 'calls') {
        setTimeout(() => { if (state.stream === es && state.view === 'calls') openStream(); }, POLL_MS);
      }
    }), 'calls');
  });
}

function closeStream() {
  if (state.stream) {
    state.stream.close();
    state.stream = null;
  }
  setLive('offline');
}

function onCall(c) {
  if (!c || typeof c !== 'object') return;
  const id = text(c.request_id);
  if (id && state.callIds.has(id)) return;
  if (state.paused) return;
  if (!callMatches(c, callFilters())) return;
  if (id) state.callIds.add(id);
  state.calls.unshift(c);
  const tbody = $('#calls-rows');
  tbody.prepend(callRow(c, true));
  while (tbody.children.length > MAX_CALL_ROWS) tbody.lastElementChild.remove();
  if (state.calls.length > MAX_CALL_ROWS) {
    const gone = state.calls.splice(MAX_CALL_ROWS);
    for (const g of gone) state.callIds.delete(text(g.request_id));
  }
  renderCallsCount(state.capacity);
}

function togglePause() {
  state.paused = !state.paused;
  $('#calls-pause').textContent = state.paused ? 'Resume' : 'Pause';
  if (state.stream && state.stream.readyState === EventSource.OPEN) setLive(state.paused ? 'paused' : 'live');
  if (!state.paused) quiet(loadCalls(), 'calls');
}

// --------------------------------------------------------------------- limits

async function loadLimits() {
  const l = await api('/admin/limits');
  renderLimits(l);
  const sec = viewSection('limits');
  sec.dataset.loads = String(Number(sec.dataset.loads || '0') + 1);
  $('#limits-updated').textContent = `updated ${clock()} · every ${POLL_MS / 1000} s`;
  setViewError('limits', null);
}

function kvList(el, pairs) {
  fill(el, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

// A quota as "10 / second" ("amount" per "per"), or the doc's "per_second".
function rate(c) {
  if (typeof c.amount === 'number') return `${num(c.amount, 2)} / ${text(c.per || 'second')}`;
  if (typeof c.per_second === 'number') return `${num(c.per_second, 2)} / second`;
  return '—';
}

function renderLimits(l) {
  const rl = l.rate_limits || {};
  const rejections = rl.rejections && typeof rl.rejections === 'object' ? rl.rejections : {};
  const configured = Array.isArray(rl.configured) ? rl.configured : [];
  const rows = configured.map((c) => h('tr', null,
    h('td', { class: 'strong' }, dash(c.limit)),
    h('td', null, c.scope ? h('code', null, text(c.scope)) : h('span', { class: 'muted' }, 'all')),
    h('td', { class: 'num' }, rate(c)),
    h('td', { class: 'num' }, num(c.burst))));
  if (!rows.length) rows.push(h('tr', null, h('td', { colspan: '4', class: 'empty' }, 'No rate limit configured.')));
  fill($('#limits-rate-rows'), rows);

  const store = rl.store;
  kvList($('#limits-store'), [
    ...(store ? [
      ['store', h('span', { class: 'mono' }, dash(store.address))],
      ['store state', badge(store.state, dash(store.state))],
      ['on store error', dash(store.on_store_error)],
    ] : [['store', 'in memory (this gateway only)']]),
    typeof rl.max_tracked_callers === 'number' ? ['callers tracked at most', num(rl.max_tracked_callers)] : null,
  ]);
  const refused = Object.entries(rejections);
  kvList($('#limits-rejections'), refused.length
    ? refused.map(([k, v]) => [`refused by ${k}`, num(Number(v))])
    : [['refused', 'none so far']]);

  const c = l.concurrency || {};
  kvList($('#limits-concurrency'), [
    ['streams open', h('span', null, `${num(c.streams_open)} / ${num(c.max_streams)}`, ' ', meter(c.streams_open, c.max_streams))],
    ['max streams', num(c.max_streams)],
    ['max per caller', num(c.max_streams_per_caller)],
  ]);

  const inflight = Array.isArray(l.in_flight) ? l.in_flight : [];
  const irows = inflight.map((r) => h('tr', null,
    h('td', null, dash(r.upstream)),
    h('td', { class: 'num' }, num(r.in_flight)),
    h('td', { class: 'num' }, num(r.max)),
    h('td', { class: 'num' }, num(r.queue)),
    h('td', { class: 'bar-col' }, meter(r.in_flight, r.max))));
  if (!irows.length) irows.push(h('tr', null, h('td', { colspan: '5', class: 'empty' }, 'No agents.')));
  fill($('#limits-inflight-rows'), irows);
}

// ---------------------------------------------------------------- credentials

// What to ask for a scheme, from /admin/config's "auth" entries (or a 401's).
function schemeKind(s) {
  const type = text(s.type).toLowerCase();
  if (type === 'apikey') {
    const where = text(s.in || 'header').toLowerCase();
    return where === 'header' || where === 'query' ? 'apikey' : 'unsupported';
  }
  if (type === 'mutualtls' || type === 'mtls') return 'unsupported';
  if (type === 'basic' || type === 'bearer') return type;
  const candidates = [s.http_scheme, s.auth_scheme, s.http, s.httpAuthSecurityScheme && s.httpAuthSecurityScheme.scheme, s.scheme]
    .map((v) => text(v).toLowerCase());
  if (candidates.includes('basic')) return 'basic';
  if (candidates.includes('bearer')) return 'bearer';
  if (type === 'http' || type === 'oauth2' || type === 'openidconnect' || type === 'jwt') return 'bearer';
  return 'header';
}

function schemeLabel(s) {
  if (typeof s.label === 'string') return s.label;
  const kind = schemeKind(s);
  const name = text(s.scheme || s.name || s.type);
  switch (kind) {
    case 'apikey': return `${name}: API key (${text(s.in || 'header')} ${text(s.name)})`;
    case 'basic': return `${name}: user and password (Basic)`;
    case 'bearer': return `${name}: bearer token`;
    case 'unsupported': return `${name}: ${text(s.type)} (not from a browser)`;
    default: return `${name}: a header`;
  }
}

// Inputs for a scheme; ids are prefix-user, prefix-password, prefix-token,
// prefix-key, prefix-header-name.
function credentialFields(container, s, prefix, purpose) {
  const kind = s ? schemeKind(s) : '';
  const pwAuto = purpose === 'signin' ? 'current-password' : 'off';
  const field = (label, input) => h('label', { class: 'field' }, h('span', null, label), input);
  const input = (id, type, auto, placeholder) => h('input', {
    id, type, autocomplete: auto, spellcheck: 'false', placeholder: placeholder || '',
  });
  const out = [];
  if (kind === 'basic') {
    out.push(field('User', input(`${prefix}-user`, 'text', purpose === 'signin' ? 'username' : 'off')));
    out.push(field('Password', input(`${prefix}-password`, 'password', pwAuto)));
  } else if (kind === 'bearer') {
    out.push(field('Token', input(`${prefix}-token`, 'password', pwAuto, 'sent as Authorization: Bearer …')));
  } else if (kind === 'apikey') {
    out.push(field(`${text(s.name) || 'API key'}`, input(`${prefix}-key`, 'password', pwAuto, `${text(s.in || 'header')} ${text(s.name)}`)));
  } else if (kind === 'header') {
    out.push(field('Header name', input(`${prefix}-header-name`, 'text', 'off', 'e.g. X-API-Key')));
    out.push(field('Value', input(`${prefix}-key`, 'password', pwAuto)));
  } else if (kind === 'unsupported') {
    out.push(h('p', { class: 'note small' }, 'This scheme cannot be used from a browser.'));
  }
  fill(container, out);
}

// Reads what was typed into header(s) (and a query parameter for apiKey in query).
function readCredential(s, prefix) {
  const got = { headers: {}, query: null };
  if (!s) return got;
  const val = (id) => { const el = document.getElementById(`${prefix}-${id}`); return el ? el.value : ''; };
  const kind = schemeKind(s);
  if (kind === 'basic') {
    const user = val('user'); const pass = val('password');
    if (user || pass) got.headers.authorization = `Basic ${base64Utf8(`${user}:${pass}`)}`;
  } else if (kind === 'bearer') {
    const t = val('token').trim();
    if (t) got.headers.authorization = `Bearer ${t}`;
  } else if (kind === 'apikey') {
    const k = val('key');
    if (k) {
      if (text(s.in || 'header').toLowerCase() === 'query') got.query = [text(s.name), k];
      else got.headers[text(s.name).toLowerCase()] = k;
    }
  } else if (kind === 'header') {
    const name = val('header-name').trim().toLowerCase(); const k = val('key');
    if (name && k) got.headers[name] = k;
  }
  return got;
}

function clearInputs(container) {
  for (const el of container.querySelectorAll('input')) el.value = '';
}

// -------------------------------------------------------------------- sign-in

// When the gateway does not say which schemes the console takes.
const FALLBACK_SCHEMES = [
  { scheme: 'basic', type: 'basic', label: 'User and password (Basic)' },
  { scheme: 'bearer', type: 'bearer', label: 'Bearer token' },
  { scheme: 'header', type: 'header', label: 'API key in a header' },
];

function showSignIn(body) {
  stopViewWork();
  state.signingIn = true;
  for (const name of VIEWS) viewSection(name).hidden = true;
  $('#nav').hidden = true;
  $('#sign-out').hidden = true;
  $('#gw-public-wrap').hidden = true;
  $('#gw-status').hidden = true;
  $('#gw-generation').hidden = true;
  setGlobalError(null);
  const section = $('#signin');
  if (!section.hidden) return; // already shown: keep what the user is typing
  let schemes = body && Array.isArray(body.auth) ? body.auth : null;
  if (!schemes && state.config && Array.isArray(state.config.auth) && state.config.auth.length) schemes = state.config.auth;
  if (!schemes || !schemes.length) schemes = FALLBACK_SCHEMES;
  schemes = schemes.filter((s) => s && typeof s === 'object' && schemeKind(s) !== 'unsupported');
  if (!schemes.length) schemes = FALLBACK_SCHEMES;
  state.signInSchemes = schemes;
  const sel = $('#signin-scheme');
  fill(sel, schemes.map((s, i) => h('option', { value: String(i), dataset: { kind: schemeKind(s) } }, schemeLabel(s))));
  sel.value = '0';
  credentialFields($('#signin-fields'), schemes[0], 'signin', 'signin');
  $('#signin-error').hidden = true;
  section.hidden = false;
  const first = $('#signin-fields input');
  if (first) first.focus();
}

async function submitSignIn(ev) {
  ev.preventDefault();
  const schemes = state.signInSchemes || FALLBACK_SCHEMES;
  const s = schemes[Number($('#signin-scheme').value) || 0];
  const cred = readCredential(s, 'signin');
  clearInputs($('#signin-fields'));
  const err = $('#signin-error');
  err.hidden = true;
  if (!Object.keys(cred.headers).length) {
    err.textContent = 'Type the credentials first.';
    err.hidden = false;
    return;
  }
  const button = $('#signin-submit');
  button.disabled = true;
  try {
    const res = await fetch('/admin/session', {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ headers: cred.headers }),
    });
    if (!res.ok) {
      err.textContent = res.status === 401 || res.status === 403
        ? 'Those credentials were refused.'
        : `Sign-in failed: ${await errorText(res)}`;
      err.hidden = false;
      return;
    }
    $('#signin').hidden = true;
    $('#nav').hidden = false;
    state.signingIn = false;
    state.view = null;
    await quiet(start());
  } catch (e) {
    err.textContent = `Sign-in failed: ${e.message}`;
    err.hidden = false;
  } finally {
    button.disabled = false;
  }
}

async function signOut() {
  try {
    await fetch('/admin/session', { method: 'DELETE', credentials: 'same-origin', cache: 'no-store' });
  } finally {
    state.config = null;
    await quiet(start());
  }
}

// ---------------------------------------------------------------------- try it

const JSONRPC = 'JSONRPC';
const HTTPJSON = 'HTTP+JSON';
const GRPC = 'GRPC';

function isGrpc(b) {
  return text(b).toUpperCase() === GRPC;
}

function setupTryForm() {
  const cfg = state.config || {};
  const versions = Array.isArray(cfg.versions) && cfg.versions.length ? cfg.versions.map(text) : ['1.0', '0.3', '0.1'];
  const bindings = Array.isArray(cfg.bindings) && cfg.bindings.length ? cfg.bindings.map(text) : [JSONRPC, HTTPJSON];
  const vsel = $('#try-version');
  const oldV = vsel.value;
  fill(vsel, versions.map((v) => h('option', { value: v }, v)));
  vsel.value = versions.includes(oldV) ? oldV : versions[0];

  const bsel = $('#try-binding');
  const oldB = bsel.value;
  const all = [JSONRPC, HTTPJSON, GRPC, ...bindings.filter((b) => b !== JSONRPC && b !== HTTPJSON && !isGrpc(b))];
  fill(bsel, all.map((b) => h('option', {
    value: b,
    dataset: { offered: bindings.includes(b) ? 'yes' : 'no' },
  }, bindingLabel(b) + (bindings.includes(b) ? '' : ' (not offered)'))));
  bsel.value = oldB && all.includes(oldB) ? oldB : JSONRPC;

  const csel = $('#try-cred-scheme');
  const auth = Array.isArray(cfg.auth) ? cfg.auth : [];
  const oldC = csel.value;
  fill(csel, h('option', { value: '' }, 'none'),
    auth.map((s, i) => h('option', { value: String(i), disabled: schemeKind(s) === 'unsupported', dataset: { kind: schemeKind(s) } }, schemeLabel(s))));
  csel.value = oldC && auth[Number(oldC)] ? oldC : '';
  onCredSchemeChange();
  updateBindingChoices();
}

function onCredSchemeChange() {
  const auth = (state.config && Array.isArray(state.config.auth)) ? state.config.auth : [];
  const v = $('#try-cred-scheme').value;
  credentialFields($('#try-cred-fields'), v === '' ? null : auth[Number(v)], 'try-cred', 'try');
  updatePreview();
}

// gRPC: a page cannot speak it (HTTP/2 frames and trailers), so the page sends
// the call's params and the gateway makes the gRPC call (docs/console.md).
function updateBindingChoices() {
  const version = $('#try-version').value;
  const bsel = $('#try-binding');
  const notes = [];
  for (const o of bsel.options) {
    const b = o.value;
    let disabled = o.dataset.offered !== 'yes';
    if (b !== JSONRPC && b !== HTTPJSON && !isGrpc(b)) disabled = true;
    if (b !== JSONRPC && version === '0.1') disabled = true;
    o.disabled = disabled;
  }
  if (bsel.selectedOptions.length && bsel.selectedOptions[0].disabled) bsel.value = JSONRPC;
  const grpc = isGrpc(bsel.value);
  const target = $('#try-target');
  target.disabled = grpc;
  if (grpc) {
    target.value = '';
    notes.push('gRPC: the page sends the params and the gateway makes the call over h2c; each answer message is an event, then the gRPC status. It goes to the gateway\'s routing.');
  }
  if (version === '0.1') notes.push('0.1 has JSON-RPC only.');
  const note = $('#try-binding-note');
  note.textContent = notes.join(' ');
  note.hidden = notes.length === 0;
  updatePreview();
}

function refreshSkillList() {
  const skills = state.skills && Array.isArray(state.skills.skills) ? state.skills.skills : [];
  const sel = $('#try-skill');
  const current = sel.value;
  const keep = sel.options[0];
  sel.replaceChildren(keep);
  for (const s of skills) {
    sel.append(h('option', { value: text(s.id) }, `${text(s.id)} (${dash(s.owner)})`));
  }
  sel.value = skills.some((s) => text(s.id) === current) ? current : '';
  updatePreview();
}

function tryChoices() {
  return {
    target: $('#try-target').value,
    version: $('#try-version').value,
    binding: $('#try-binding').value,
    skill: $('#try-skill').value,
    stream: $('#try-stream').checked,
    text: $('#try-text').value,
  };
}

// The request a client would send, for the chosen version and binding.
function buildTryRequest(f) {
  const headers = {
    'content-type': 'application/json',
    accept: f.stream ? 'text/event-stream' : 'application/json',
  };
  if (f.version === '1.0') headers['a2a-version'] = '1.0';
  if (f.skill) headers['a2a-skill'] = f.skill;
  const base = f.target ? `/agents/${encodeURIComponent(f.target)}` : '';
  const messageId = uuid();
  let path;
  let body;
  if (f.binding === JSONRPC) {
    path = `${base}/`;
    let method;
    let params;
    if (f.version === '1.0') {
      method = f.stream ? 'SendStreamingMessage' : 'SendMessage';
      params = { message: { messageId, role: 'ROLE_USER', parts: [{ text: f.text }] } };
    } else if (f.version === '0.3') {
      method = f.stream ? 'message/stream' : 'message/send';
      params = { message: { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text: f.text }] } };
    } else if (f.version === '0.1') {
      method = f.stream ? 'tasks/sendSubscribe' : 'tasks/send';
      params = { id: uuid(), message: { role: 'user', parts: [{ type: 'text', text: f.text }] } };
    } else {
      throw new Error(`version ${f.version} is not one this console can build`);
    }
    body = { jsonrpc: '2.0', id: uuid(), method, params };
  } else if (f.binding === HTTPJSON) {
    if (f.version === '1.0') {
      path = `${base}${f.stream ? '/message:stream' : '/message:send'}`;
      body = { message: { messageId, role: 'ROLE_USER', parts: [{ text: f.text }] } };
    } else if (f.version === '0.3') {
      path = `${base}${f.stream ? '/v1/message:stream' : '/v1/message:send'}`;
      body = { message: { messageId, role: 'ROLE_USER', content: [{ text: f.text }] } };
    } else {
      throw new Error(`HTTP+JSON has no version ${f.version}`);
    }
  } else if (isGrpc(f.binding)) {
    let params;
    if (f.version === '1.0') {
      params = { message: { messageId, role: 'ROLE_USER', parts: [{ text: f.text }] } };
    } else if (f.version === '0.3') {
      params = { message: { messageId, role: 'ROLE_USER', content: [{ text: f.text }] } };
    } else {
      throw new Error(`gRPC has no version ${f.version}`);
    }
    delete headers['content-type'];
    delete headers.accept;
    return { binding: 'grpc', version: f.version, stream: f.stream, params, headers };
  } else {
    throw new Error(`${bindingLabel(f.binding)} cannot be sent from here`);
  }
  return { method: 'POST', path, headers, body: JSON.stringify(body) };
}

function updatePreview() {
  const pre = $('#try-preview');
  if (!pre) return;
  try {
    const req = buildTryRequest(tryChoices());
    const auth = (state.config && Array.isArray(state.config.auth)) ? state.config.auth : [];
    const v = $('#try-cred-scheme').value;
    const cred = v === '' ? null : auth[Number(v)];
    const shown = { ...req.headers };
    if (cred) {
      const kind = schemeKind(cred);
      if (kind === 'basic' || kind === 'bearer') shown.authorization = '(typed credential)';
      if (kind === 'apikey' && text(cred.in || 'header').toLowerCase() === 'header') shown[text(cred.name).toLowerCase()] = '(typed credential)';
    }
    const preview = { ...req, headers: shown };
    if (typeof req.body === 'string') {
      try { preview.body = JSON.parse(req.body); } catch (_) { /* shown as is */ }
    }
    pre.textContent = JSON.stringify(preview, null, 2);
  } catch (e) {
    pre.textContent = e.message;
  }
}

// A tiny SSE parser (WHATWG event-stream rules: fields, comments, blank line ends).
function sseParser(onEvent) {
  let buf = '';
  let data = [];
  let event = '';
  let id = '';
  const line = (l) => {
    if (l === '') {
      if (data.length) onEvent({ event: event || 'message', data: data.join('\n'), id });
      data = [];
      event = '';
      return;
    }
    if (l.startsWith(':')) return;
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
  };
  return {
    push(chunk) {
      buf += chunk;
      for (;;) {
        const m = /\r\n|\n|\r/.exec(buf);
        if (!m) break;
        if (m[0] === '\r' && m.index === buf.length - 1) break; // maybe \r\n split
        line(buf.slice(0, m.index));
        buf = buf.slice(m.index + m[0].length);
      }
    },
    end() {
      if (buf) line(buf);
      buf = '';
      line('');
    },
  };
}

// What an event is, in a word: status, artifact, task, message, error.
function eventKind(v) {
  if (!v || typeof v !== 'object') return null;
  if (v.error) return 'error';
  const r = v.result && typeof v.result === 'object' ? v.result : v;
  if (typeof r.kind === 'string') return r.kind;
  if (r['grpc-status'] !== undefined) return null;
  for (const [k, label] of [['statusUpdate', 'status-update'], ['artifactUpdate', 'artifact-update'],
    ['task', 'task'], ['message', 'message'], ['msg', 'message']]) {
    if (r[k]) return label;
  }
  if (r.artifact) return 'artifact';
  if (r.status) return 'status';
  return null;
}

// The task state an event carries, if any (1.0, 0.3 and 0.1 shapes alike).
function findState(v, depth = 0) {
  if (!v || typeof v !== 'object' || depth > 6) return null;
  if (v.status && typeof v.status === 'object' && typeof v.status.state === 'string') return v.status.state;
  if (typeof v.state === 'string' && depth > 0) return v.state;
  for (const k of ['result', 'statusUpdate', 'task', 'artifactUpdate', 'msg', 'payload']) {
    if (v[k]) {
      const s = findState(v[k], depth + 1);
      if (s) return s;
    }
  }
  return null;
}

function shortState(s) {
  return text(s).replace(/^TASK_STATE_/, '').toLowerCase();
}

function setTryStatus(parts) {
  fill($('#try-status'), parts);
}

function addTranscriptEvent(n, t0, label, raw) {
  let body = raw;
  let parsed = null;
  try {
    parsed = JSON.parse(raw);
    body = JSON.stringify(parsed, null, 2);
  } catch (_) {
    parsed = null;
  }
  const st = parsed ? findState(parsed) : null;
  const rpcError = parsed && parsed.error ? parsed.error : null;
  const kind = eventKind(parsed);
  const li = h('li', { class: `event${rpcError ? ' event-error' : ''}` },
    h('div', { class: 'event-head' },
      h('span', { class: 'event-n' }, `#${n}`),
      h('span', { class: 'muted' }, `+${((performance.now() - t0) / 1000).toFixed(2)} s`),
      label ? h('span', { class: 'chip' }, label) : null,
      kind && kind !== 'error' ? h('span', { class: 'chip' }, kind) : null,
      st ? badge(shortState(st), shortState(st)) : null,
      rpcError ? badge('error', 'error') : null),
    h('pre', { class: 'code event-body' }, body));
  const list = $('#try-transcript');
  list.append(li);
  li.scrollIntoView({ block: 'nearest' });
  return { state: st, error: rpcError, parsed };
}

async function sendTry(ev) {
  ev.preventDefault();
  if (state.tryAbort) return;
  const f = tryChoices();
  let req;
  const credContainer = $('#try-cred-fields');
  try {
    req = buildTryRequest(f);
  } catch (e) {
    clearInputs(credContainer);
    setTryStatus(h('span', { class: 'error-text' }, e.message));
    return;
  }
  const auth = (state.config && Array.isArray(state.config.auth)) ? state.config.auth : [];
  const cv = $('#try-cred-scheme').value;
  const cred = readCredential(cv === '' ? null : auth[Number(cv)], 'try-cred');
  Object.assign(req.headers, cred.headers);
  if (cred.query && req.path) {
    req.path += `${req.path.includes('?') ? '&' : '?'}${encodeURIComponent(cred.query[0])}=${encodeURIComponent(cred.query[1])}`;
  }

  const ctl = new AbortController();
  state.tryAbort = ctl;
  const timer = setTimeout(() => ctl.abort(), TRY_TIMEOUT_MS);
  $('#try-send').disabled = true;
  $('#try-stop').disabled = false;
  const list = $('#try-transcript');
  list.replaceChildren();
  const t0 = performance.now();
  let n = 0;
  let last = null;
  let errors = 0;
  let httpStatus = null;
  let ctype = '';
  let grpcStatus = null;
  const summary = (extra) => {
    const parts = [];
    if (httpStatus !== null) parts.push(statusBadge(httpStatus));
    if (ctype) parts.push(h('span', { class: 'muted' }, ` ${ctype.split(';')[0]}`));
    parts.push(h('span', { class: 'muted' }, ` · ${n} event${n === 1 ? '' : 's'} · ${((performance.now() - t0) / 1000).toFixed(2)} s`));
    if (last) parts.push(' · final ', badge(shortState(last), shortState(last)));
    if (errors) parts.push(' ', badge('error', `${errors} error${errors === 1 ? '' : 's'}`));
    if (grpcStatus) {
      const okay = text(grpcStatus['grpc-status']) === '0';
      parts.push(' · ', badge(null, `gRPC ${text(grpcStatus['grpc-status'])}${okay ? ' OK' : ''}`, okay ? 'ok' : 'bad'));
      if (!okay && grpcStatus['grpc-message']) parts.push(' ', h('span', { class: 'error-text' }, text(grpcStatus['grpc-message'])));
    }
    if (extra) parts.push(' · ', extra);
    setTryStatus(parts);
  };
  setTryStatus(h('span', { class: 'muted' }, req.binding === 'grpc' ? `sending gRPC ${req.version} …` : `sending ${req.method} ${req.path} …`));
  const onEvent = (label, data) => {
    n += 1;
    const r = addTranscriptEvent(n, t0, label, data);
    if (label === 'status' && r.parsed && r.parsed['grpc-status'] !== undefined) grpcStatus = r.parsed;
    if (r.state) last = r.state;
    if (r.error) errors += 1;
    summary(h('span', { class: 'muted' }, 'streaming'));
  };
  try {
    const res = await fetch('/admin/try', {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream, application/json' },
      body: JSON.stringify(req),
      signal: ctl.signal,
    });
    req = null;
    clearInputs(credContainer);
    await checkSignIn(res);
    httpStatus = res.status;
    ctype = res.headers.get('content-type') || '';
    summary(h('span', { class: 'muted' }, 'reading'));
    if (ctype.toLowerCase().includes('text/event-stream') && res.body) {
      const parser = sseParser((e) => onEvent(e.event !== 'message' ? e.event : null, e.data));
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(dec.decode(value, { stream: true }));
      }
      parser.push(dec.decode());
      parser.end();
    } else {
      const body = await res.text();
      if (body) onEvent(null, body);
    }
    summary(h('span', { class: res.ok ? 'muted' : 'error-text' }, 'done'));
  } catch (e) {
    if (e instanceof SignInNeeded) return;
    const stopped = e && e.name === 'AbortError';
    summary(h('span', { class: stopped ? 'muted' : 'error-text' }, stopped ? 'stopped' : `failed: ${e.message}`));
  } finally {
    clearTimeout(timer);
    clearInputs(credContainer);
    state.tryAbort = null;
    $('#try-send').disabled = false;
    $('#try-stop').disabled = true;
  }
}

function stopTry() {
  if (state.tryAbort) state.tryAbort.abort();
}

// --------------------------------------------------------------------- routing

function currentView() {
  const v = location.hash.replace(/^#/, '');
  return VIEWS.includes(v) ? v : 'fleet';
}

function stopViewWork() {
  if (state.poll) {
    clearTimeout(state.poll.timer);
    state.poll = null;
  }
  closeStream();
}

function poll(view, load) {
  const tick = () => {
    if (!state.poll || state.poll.view !== view) return;
    const run = document.hidden ? Promise.resolve() : quiet(load(), view);
    run.finally(() => {
      if (state.poll && state.poll.view === view) state.poll.timer = setTimeout(tick, POLL_MS);
    });
  };
  state.poll = { view, timer: null };
  tick();
}

function route() {
  if (state.signingIn) return;
  const v = currentView();
  if (v === state.view) return;
  stopViewWork();
  state.view = v;
  for (const name of VIEWS) viewSection(name).hidden = name !== v;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.view === v) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${v[0].toUpperCase()}${v.slice(1)} · a2a-gateway console`;
  if (v === 'fleet') poll('fleet', loadFleet);
  else if (v === 'limits') poll('limits', loadLimits);
  else if (v === 'skills') quiet(loadSkills(), 'skills');
  else if (v === 'calls') {
    if (!state.fleet) quiet(loadFleet(), 'calls');
    quiet(loadCalls().then(() => { if (state.view === 'calls') openStream(); }), 'calls');
  } else if (v === 'try') {
    quiet(loadFleet(), 'try');
    quiet(loadSkills(), 'try');
  }
}

async function start() {
  setGlobalError(null);
  try {
    await loadConfig();
  } catch (e) {
    if (e instanceof SignInNeeded) return;
    setGlobalError(e);
  }
  $('#nav').hidden = false;
  state.view = null;
  route();
}

function wire() {
  window.addEventListener('hashchange', route);
  $('#signin-form').addEventListener('submit', submitSignIn);
  $('#signin-scheme').addEventListener('change', () => {
    const schemes = state.signInSchemes || FALLBACK_SCHEMES;
    credentialFields($('#signin-fields'), schemes[Number($('#signin-scheme').value) || 0], 'signin', 'signin');
  });
  $('#sign-out').addEventListener('click', () => { signOut(); });
  $('#match-text').addEventListener('input', scheduleMatch);
  $('#calls-filters').addEventListener('submit', (e) => e.preventDefault());
  for (const id of ['#calls-agent', '#calls-status']) {
    $(id).addEventListener('change', () => quiet(loadCalls(), 'calls'));
  }
  let callerTimer = null;
  $('#calls-caller').addEventListener('input', () => {
    clearTimeout(callerTimer);
    callerTimer = setTimeout(() => quiet(loadCalls(), 'calls'), MATCH_DEBOUNCE_MS);
  });
  $('#calls-pause').addEventListener('click', togglePause);
  $('#calls-clear').addEventListener('click', () => {
    state.calls = [];
    $('#calls-rows').replaceChildren();
    renderCallsCount(state.capacity);
  });
  $('#try-form').addEventListener('submit', sendTry);
  $('#try-stop').addEventListener('click', stopTry);
  $('#try-version').addEventListener('change', updateBindingChoices);
  $('#try-binding').addEventListener('change', updateBindingChoices);
  $('#try-cred-scheme').addEventListener('change', onCredSchemeChange);
  for (const id of ['#try-target', '#try-skill', '#try-stream', '#try-text']) {
    $(id).addEventListener(id === '#try-text' ? 'input' : 'change', updatePreview);
  }
}

wire();
quiet(start());
