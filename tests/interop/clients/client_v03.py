"""Interop client on a2a-sdk 0.3.x: python client_v03.py BASE_URL [--skill ID] [--rest | --grpc]

Default: the SDK's defaults (JSON-RPC). --rest: HTTP+JSON only (the 0.3
routes under /v1), which the card must offer. --grpc: gRPC only
(a2a.v1.A2AService over grpc.aio insecure channels to the card's
host:port), which the card must offer.
"""
import asyncio
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    Message, Part, Role, Task, TaskIdParams, TaskQueryParams, TextPart,
    TransportProtocol,
)

from common import OPS, norm_state, parse_args, report, run_ops, skill_metadata


def texts(parts) -> str:
    return ' '.join(p.root.text for p in parts or []
                    if isinstance(p.root, TextPart))


def task_text(t: Task) -> list[str]:
    out = [texts(t.status.message.parts)] if t.status.message else []
    return out + [texts(a.parts) for a in t.artifacts or []]


class V03:
    def __init__(self, http, card, skill='', rest=False, grpc=False):
        self.meta = skill_metadata(skill)
        # Empty supported_transports means JSON-RPC only.
        transports = [TransportProtocol.http_json] if rest else []
        transports = [TransportProtocol.grpc] if grpc else transports
        f = lambda s: ClientFactory(ClientConfig(
            streaming=s, httpx_client=http, supported_transports=transports,
            grpc_channel_factory=channel if grpc else None))
        self.plain = f(False).create(card)
        self.streaming = f(True).create(card)

    async def _run(self, client, text, task_id=None, context_id=None):
        msg = Message(message_id=str(uuid.uuid4()), role=Role.user,
                      parts=[Part(root=TextPart(text=text))],
                      task_id=task_id, context_id=context_id,
                      metadata=self.meta)
        state, out, tid, ctx = '', [], '', ''
        async for ev in client.send_message(msg):
            if isinstance(ev, Message):
                out.append(texts(ev.parts)); tid = ev.task_id; ctx = ev.context_id
                continue
            task, update = ev  # the client aggregates updates into task
            state = norm_state(task.status.state.value)
            tid, ctx = task.id, task.context_id
            out += task_text(task)
        return state, ' | '.join(x for x in out if x), tid, ctx

    async def send(self, text, task_id=None, context_id=None):
        return await self._run(self.plain, text, task_id, context_id)

    async def stream(self, text):
        return await self._run(self.streaming, text)

    async def get(self, task_id):
        t = await self.plain.get_task(TaskQueryParams(id=task_id))
        return norm_state(t.status.state.value)

    async def cancel(self, task_id):
        t = await self.plain.cancel_task(TaskIdParams(id=task_id))
        return norm_state(t.status.state.value)


def channel(url: str):
    import grpc
    return grpc.aio.insecure_channel(url)


async def main(base: str, skill: str, rest: bool, grpc: bool) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        try:
            card = await A2ACardResolver(http, base).get_agent_card()
        except Exception as e:  # noqa: BLE001
            err = f'FAIL: card: {type(e).__name__}: {e}'.splitlines()[0][:300]
            report('', {op: err for op in OPS})
            return
        try:
            client = V03(http, card, skill, rest, grpc)
        except Exception as e:  # noqa: BLE001 - e.g. no HTTP+JSON interface
            err = f'FAIL: client: {type(e).__name__}: {e}'.splitlines()[0][:300]
            report('', {op: err for op in OPS})
            return
        want = 'GRPC' if grpc else 'HTTP+JSON' if rest else 'JSONRPC'
        url = next((i.url for i in card.additional_interfaces or []
                    if i.transport == want), card.url)
        report(url, await run_ops(client, skill))


if __name__ == '__main__':
    asyncio.run(main(*parse_args('--rest', '--grpc')))
