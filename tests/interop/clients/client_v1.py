"""Interop client on a2a-sdk 1.x: python client_v1.py BASE_URL [--skill ID]"""
import asyncio
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest,
)

from common import norm_state, parse_args, report, run_ops, skill_metadata
from a2a.types import TaskState


def st_name(v) -> str:
    return norm_state(TaskState.Name(v))


def texts(parts) -> str:
    return ' '.join(p.text for p in parts if p.HasField('text'))


class V1:
    def __init__(self, http, card, skill=''):
        self.meta = skill_metadata(skill)
        f = lambda s: ClientFactory(ClientConfig(streaming=s, httpx_client=http))
        self.plain = f(False).create(card)
        self.streaming = f(True).create(card)

    async def _run(self, client, text, task_id=None, context_id=None):
        msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                      parts=[Part(text=text)], task_id=task_id or '',
                      context_id=context_id or '', metadata=self.meta)
        state, out, tid, ctx = '', [], '', ''
        async for ev in client.send_message(SendMessageRequest(message=msg)):
            if ev.HasField('message'):
                m = ev.message
                out.append(texts(m.parts)); tid = m.task_id; ctx = m.context_id
            elif ev.HasField('task'):
                t = ev.task
                state, tid, ctx = st_name(t.status.state), t.id, t.context_id
                out.append(texts(t.status.message.parts))
                out += [texts(a.parts) for a in t.artifacts]
            elif ev.HasField('status_update'):
                u = ev.status_update
                state, tid, ctx = st_name(u.status.state), u.task_id, u.context_id
                out.append(texts(u.status.message.parts))
            elif ev.HasField('artifact_update'):
                out.append(texts(ev.artifact_update.artifact.parts))
        return state, ' | '.join(x for x in out if x), tid, ctx

    async def send(self, text, task_id=None, context_id=None):
        return await self._run(self.plain, text, task_id, context_id)

    async def stream(self, text):
        return await self._run(self.streaming, text)

    async def get(self, task_id):
        t = await self.plain.get_task(GetTaskRequest(id=task_id))
        return st_name(t.status.state)

    async def cancel(self, task_id):
        t = await self.plain.cancel_task(CancelTaskRequest(id=task_id))
        return st_name(t.status.state)


async def main(base: str, skill: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        try:
            card = await A2ACardResolver(http, base).get_agent_card()
        except Exception as e:  # noqa: BLE001
            err = f'FAIL: card: {type(e).__name__}: {e}'.splitlines()[0][:300]
            report('', {op: err for op in
                        ['send', 'stream', 'get', 'cancel', 'multiturn']})
            return
        url = card.supported_interfaces[0].url if card.supported_interfaces else ''
        report(url, await run_ops(V1(http, card, skill), skill))


if __name__ == '__main__':
    asyncio.run(main(*parse_args()))
