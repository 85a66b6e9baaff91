"""Shared bits for the interop clients: the five operations and the report.

Each client module provides an object with async methods
  send(text, task_id=None, context_id=None) -> (state, text, task_id, context_id)
  stream(text) -> (state, text, task_id, context_id)
  get(task_id) -> state
  cancel(task_id) -> state
States are lower-case words: completed, input-required, canceled, ...
The result is one JSON line on stdout: {"card_url":..., "ops": {op: "ok" | "FAIL: ..."}}.

Command line of every client: BASE_URL [--skill ID] (client_v1.py also takes
--rest and --trace, see there; TraceTransport below). With --skill, every
message the client sends carries metadata {"skillId": ID} (how the gateway's
fleet endpoint is told which agent to route to), and every agent answer must
carry "(by ID)", the signature of the agent that owns ID.
"""
import argparse
import asyncio
import json
import sys
import traceback

import httpx

OPS = ['send', 'stream', 'get', 'cancel', 'multiturn']
OP_TIMEOUT = 15.0


def parse_args(*flags: str) -> tuple:
    """(base, skill), then one bool per extra flag (e.g. '--rest') given."""
    ap = argparse.ArgumentParser()
    ap.add_argument('base')
    ap.add_argument('--skill', default='')
    for f in flags:
        ap.add_argument(f, action='store_true')
    a = ap.parse_args()
    return (a.base, a.skill,
            *(getattr(a, f.lstrip('-').replace('-', '_')) for f in flags))


def skill_metadata(skill: str) -> dict | None:
    """Message metadata asking the gateway to route to a skill, or None."""
    return {'skillId': skill} if skill else None


def norm_state(s) -> str:
    s = str(s).lower()
    for pre in ('taskstate.', 'task_state_'):
        if s.startswith(pre):
            s = s[len(pre):]
    return s.replace('_', '-')


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def answered_by(skill: str) -> str:
    """The mark the echo agents put in every echo: "(by SKILL)", with
    SKILL the agent's own skill id (the fleet card may prefix it "name/")."""
    return f"(by {skill.rsplit('/', 1)[-1]})" if skill else ''


async def run_ops(c, skill: str = '') -> dict:
    """With skill (fleet mode) every echo must also come from that agent."""
    ops: dict = {}
    sent: dict = {}
    by = answered_by(skill)

    async def op_send():
        st, text, tid, _ = await c.send('hello')
        expect('echo: hello' in text, f'no echo in reply ({st!r}, {text!r})')
        expect(by in text, f'answered by another agent ({text!r})')
        sent['tid'] = tid

    async def op_stream():
        st, text, _, _ = await c.stream('hello stream')
        expect(st == 'completed', f'stream ended in state {st!r}')
        expect('echo: hello stream' in text, f'no echo in stream ({text!r})')
        expect(by in text, f'answered by another agent ({text!r})')

    async def op_get():
        expect(bool(sent.get('tid')), 'no task id from send (message reply?)')
        st = await c.get(sent['tid'])
        expect(st == 'completed', f'get: state {st!r}')

    async def op_cancel():
        st, text, tid, _ = await c.send('more please')
        expect(st == 'input-required', f'first turn state {st!r}')
        expect(by in text, f'answered by another agent ({text!r})')
        st = await c.cancel(tid)
        expect(st == 'canceled', f'cancel: state {st!r}')

    async def op_multiturn():
        st, text, tid, ctx = await c.send('need more')
        expect(st == 'input-required', f'first turn state {st!r}')
        expect(by in text, f'answered by another agent ({text!r})')
        st, text, tid2, _ = await c.send('done', task_id=tid, context_id=ctx)
        expect(st == 'completed', f'second turn state {st!r}')
        expect(tid2 == tid, f'second turn task id {tid2!r} != {tid!r}')
        expect('echo: done' in text, f'second turn text {text!r}')
        expect(by in text, f'answered by another agent ({text!r})')

    fns = dict(send=op_send, stream=op_stream, get=op_get, cancel=op_cancel,
               multiturn=op_multiturn)
    for op in OPS:
        try:
            await asyncio.wait_for(fns[op](), OP_TIMEOUT)
            ops[op] = 'ok'
        except Exception as e:  # noqa: BLE001 - every failure is a measurement
            msg = f'{type(e).__name__}: {e}'.strip().splitlines()
            ops[op] = 'FAIL: ' + (msg[0] if msg else type(e).__name__)[:300]
            if op == 'send':
                traceback.print_exc()
    return ops


TRACE_BODY = 2000  # characters of each logged body or stream chunk


class TraceTransport(httpx.AsyncBaseTransport):
    """httpx transport that logs every exchange to stderr (the client's .err
    file under out/): "> N METHOD PATH?QUERY BODY", then "< N STATUS TYPE"
    and "<< N CHUNK" for each chunk of the answer as the client reads it
    (so a stream is logged event by event, and nothing the client does
    not read is logged). Bodies are cut at TRACE_BODY characters."""

    def __init__(self):
        self.inner = httpx.AsyncHTTPTransport()
        self.n = 0

    @staticmethod
    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    async def handle_async_request(self, req: httpx.Request) -> httpx.Response:
        self.n += 1
        n = self.n
        try:
            body = req.content.decode('utf-8', 'replace')
        except httpx.RequestNotRead:
            body = '(streamed body)'
        self.log(f'> {n} {req.method} {req.url.raw_path.decode()} '
                 f'{body[:TRACE_BODY]}'.rstrip())
        resp = await self.inner.handle_async_request(req)
        self.log(f"< {n} {resp.status_code} {resp.headers.get('content-type', '')}")
        resp.stream = _TeeStream(resp.stream, n, self.log)
        return resp

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TeeStream(httpx.AsyncByteStream):
    def __init__(self, inner, n, log):
        self.inner, self.n, self.log = inner, n, log

    async def __aiter__(self):
        async for chunk in self.inner:
            text = chunk.decode('utf-8', 'replace')
            self.log(f'<< {self.n} {text[:TRACE_BODY]}'.rstrip())
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def report(card_url: str, ops: dict) -> None:
    print(json.dumps({'card_url': card_url, 'ops': ops}), flush=True)
