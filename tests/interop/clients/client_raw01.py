"""Raw A2A 0.1 JSON-RPC client (no SDK): python client_raw01.py BASE_URL [--skill ID]

0.1 style: tasks/send and tasks/sendSubscribe with a client-chosen task id,
parts as {"type": "text", ...}, sessionId instead of contextId.
"""
import asyncio
import json
import uuid

import httpx

from common import OPS, norm_state, parse_args, report, run_ops, skill_metadata


def texts(parts) -> str:
    return ' '.join(p.get('text', '') for p in parts or [] if 'text' in p)


def task_text(t: dict) -> list[str]:
    st = t.get('status') or {}
    out = [texts((st.get('message') or {}).get('parts'))]
    return out + [texts(a.get('parts')) for a in t.get('artifacts') or []]


class Raw01:
    def __init__(self, http, url, skill=''):
        self.http, self.url = http, url
        self.meta = skill_metadata(skill)

    async def rpc(self, method, params) -> dict:
        body = {'jsonrpc': '2.0', 'id': str(uuid.uuid4()), 'method': method,
                'params': params}
        r = await self.http.post(self.url, json=body)
        if not r.headers.get('content-type', '').startswith('application/json'):
            raise RuntimeError(f'HTTP {r.status_code} {r.text[:120]!r}')
        j = r.json()
        if 'error' in j:
            raise RuntimeError(f"JSON-RPC error {json.dumps(j['error'])[:200]}")
        return j['result']

    def params(self, text, task_id=None, context_id=None) -> dict:
        msg = {'role': 'user', 'parts': [{'type': 'text', 'text': text}]}
        if self.meta:
            msg['metadata'] = self.meta
        return {'id': task_id or str(uuid.uuid4()),
                'sessionId': context_id or str(uuid.uuid4()), 'message': msg}

    async def send(self, text, task_id=None, context_id=None):
        p = self.params(text, task_id, context_id)
        t = await self.rpc('tasks/send', p)
        return (norm_state((t.get('status') or {}).get('state')),
                ' | '.join(x for x in task_text(t) if x), t.get('id'),
                t.get('sessionId') or t.get('contextId'))

    async def stream(self, text):
        p = self.params(text)
        body = {'jsonrpc': '2.0', 'id': 1, 'method': 'tasks/sendSubscribe',
                'params': p}
        state, out, n = '', [], 0
        async with self.http.stream('POST', self.url, json=body) as r:
            if 'text/event-stream' not in r.headers.get('content-type', ''):
                await r.aread()
                raise RuntimeError(f'HTTP {r.status_code}, not SSE: {r.text[:160]!r}')
            async for line in r.aiter_lines():
                n += 1
                if n > 200:
                    break
                if not line.startswith('data:'):
                    continue
                j = json.loads(line[5:])
                if 'error' in j:
                    raise RuntimeError(f"JSON-RPC error {json.dumps(j['error'])[:200]}")
                ev = j.get('result') or {}
                if 'status' in ev:
                    state = norm_state(ev['status'].get('state'))
                    out.append(texts((ev['status'].get('message') or {}).get('parts')))
                if 'artifact' in ev:
                    out.append(texts(ev['artifact'].get('parts')))
                if ev.get('final'):
                    break
            if n == 0:
                raise RuntimeError(f'HTTP {r.status_code}, empty stream')
        return state, ' | '.join(x for x in out if x), p['id'], p['sessionId']

    async def get(self, task_id):
        t = await self.rpc('tasks/get', {'id': task_id})
        return norm_state((t.get('status') or {}).get('state'))

    async def cancel(self, task_id):
        t = await self.rpc('tasks/cancel', {'id': task_id})
        return norm_state((t.get('status') or {}).get('state'))


async def main(base: str, skill: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        url = base.rstrip('/') + '/'
        try:
            r = await http.get(base.rstrip('/') + '/.well-known/agent-card.json')
            url = r.json().get('url') or url
        except Exception:  # noqa: BLE001 - a 0.1 client falls back to base
            pass
        report(url, await run_ops(Raw01(http, url, skill), skill))


if __name__ == '__main__':
    asyncio.run(main(*parse_args()))
