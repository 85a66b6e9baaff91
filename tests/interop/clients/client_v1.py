"""Interop client on a2a-sdk 1.x:
python client_v1.py BASE_URL [--skill ID] [--rest | --grpc] [--trace]

Default: the SDK's defaults (JSON-RPC only). --rest: HTTP+JSON only
(ClientConfig.supported_protocol_bindings=['HTTP+JSON']), so the card must
offer an HTTP+JSON interface. --grpc: gRPC only (['GRPC'], with
grpc.aio insecure channels to the interface's host:port; the SDK echoes
the interface's tenant in every request). --trace: log every HTTP exchange to stderr
(common.TraceTransport)."""
import asyncio
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest,
)

from common import (
    TraceTransport, norm_state, parse_args, report, run_ops, skill_metadata,
)
from a2a.types import TaskState
from a2a.utils.constants import TransportProtocol


def st_name(v) -> str:
    return norm_state(TaskState.Name(v))


def texts(parts) -> str:
    return ' '.join(p.text for p in parts if p.HasField('text'))


def channel(url: str):
    import grpc
    return grpc.aio.insecure_channel(url)


class V1:
    def __init__(self, http, card, skill='', rest=False, grpc=False):
        self.meta = skill_metadata(skill)
        # Empty supported_protocol_bindings means JSON-RPC only.
        bindings = [TransportProtocol.HTTP_JSON] if rest else []
        bindings = [TransportProtocol.GRPC] if grpc else bindings
        f = lambda s: ClientFactory(ClientConfig(
            streaming=s, httpx_client=http,
            supported_protocol_bindings=bindings,
            grpc_channel_factory=channel if grpc else None))
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


async def main(base: str, skill: str, rest: bool, grpc: bool, trace: bool) -> None:
    tr = TraceTransport() if trace else None
    async with httpx.AsyncClient(timeout=10, transport=tr) as http:
        try:
            card = await A2ACardResolver(http, base).get_agent_card()
        except Exception as e:  # noqa: BLE001
            err = f'FAIL: card: {type(e).__name__}: {e}'.splitlines()[0][:300]
            report('', {op: err for op in
                        ['send', 'stream', 'get', 'cancel', 'multiturn']})
            return
        try:
            c = V1(http, card, skill, rest, grpc)
        except Exception as e:  # noqa: BLE001 - e.g. no HTTP+JSON interface
            err = f'FAIL: client: {type(e).__name__}: {e}'.splitlines()[0][:300]
            report('', {op: err for op in
                        ['send', 'stream', 'get', 'cancel', 'multiturn']})
            return
        want = TransportProtocol.HTTP_JSON if rest else TransportProtocol.JSONRPC
        want = TransportProtocol.GRPC if grpc else want
        url = next((i.url for i in card.supported_interfaces
                    if i.protocol_binding == want), '')
        report(url, await run_ops(c, skill))


if __name__ == '__main__':
    asyncio.run(main(*parse_args('--rest', '--grpc', '--trace')))
