"""Tiny echo agent on a2a-sdk 1.x (JSON-RPC or HTTP+JSON binding).

  python agent_v1.py --port P [--compat | --rest | --grpc] [--skill ID]
                     [--sign-key PEM --sign-kid KID [--sign-jku URL]]
                     [--push [--push-delay SECONDS]]

Without --compat it speaks A2A 1.0 only; with --compat it also accepts
0.3 JSON-RPC on the same endpoint (SDK option enable_v0_3_compat) and its
card advertises both protocol versions. With --rest it serves only the
HTTP+JSON binding of 1.0, under /rest (the card's interface URL says so),
and no JSON-RPC at all. With --grpc it serves only the gRPC binding of 1.0
(the SDK's GrpcHandler on grpc.aio), on a port of its own that the card's
one interface names as a bare host:port; port P serves only the card.
A message whose text contains "more" leaves the task input-required
("need more input (by SKILL)"); anything else completes it with an echo,
"echo: TEXT (by SKILL)", in the status message and in an artifact. SKILL
(--skill, default "echo") tells which agent answered.

With --sign-key the agent serves its card signed by the SDK's own signer
(`a2a.utils.signing.create_agent_card_signer`), as an operator of a2a-sdk
1.x does it: the signer is the `card_modifier` of `create_agent_card_routes`.
The key is an ES256 (P-256) private key in PEM; the protected header is
{"alg": "ES256", "kid": KID, "typ": "JOSE"} plus "jku": URL with --sign-jku.
The signer appends to the card it is given, so each request signs a copy
(one signature per served card, not one more per request).

With --push the card says capabilities.pushNotifications and the request
handler gets the SDK's own InMemoryPushNotificationConfigStore and
BasePushNotificationSender (an httpx.AsyncClient, no URL screening): a push
config set on message/send (or by the create call) is stored, and the SDK
POSTs each task event (the Task, the artifact update, the final status
update) to its url as a 1.0 StreamResponse JSON, with the config's token in
X-A2A-Notification-Token (and Authorization: SCHEME CREDENTIALS if set).
Without --push nothing changes. With --push-delay SECONDS (only with --push)
a task that will complete first waits that long, after it is submitted and
before its artifact and completion: a non-blocking send returns the task
still submitted, and the push with the completed task comes that much later
(push.sh's replica test). Without it the agent does not wait.
"""
import argparse
import asyncio

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes, create_jsonrpc_routes, create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState,
)


class EchoExecutor(AgentExecutor):
    def __init__(self, skill: str, delay: float = 0.0):
        self.skill, self.delay = skill, delay

    async def execute(self, context: RequestContext, event_queue) -> None:
        text = context.get_user_input()
        if context.current_task is None:
            await event_queue.enqueue_event(new_task(
                context.task_id, context.context_id,
                TaskState.TASK_STATE_SUBMITTED, history=[context.message]))
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        if 'more' in text:
            await up.requires_input(up.new_agent_message(
                [Part(text=f'need more input (by {self.skill})')]))
            return
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        await up.add_artifact([Part(text=f'echo: {text} (by {self.skill})')], name='echo')
        await up.complete(up.new_agent_message([Part(text=f'echo: {text} (by {self.skill})')]))

    async def cancel(self, context: RequestContext, event_queue) -> None:
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        await up.cancel()


def card_signer(a):
    """The card modifier that signs the served card (None without --sign-key)."""
    if not a.sign_key:
        return None
    from a2a.utils.signing import create_agent_card_signer

    header = {'alg': 'ES256', 'kid': a.sign_kid, 'typ': 'JOSE'}
    if a.sign_jku:
        header['jku'] = a.sign_jku
    with open(a.sign_key, 'rb') as f:
        sign = create_agent_card_signer(signing_key=f.read(), protected_header=header)

    async def sign_copy(card: AgentCard) -> AgentCard:
        copied = AgentCard()
        copied.CopyFrom(card)
        return sign(copied)

    return sign_copy


def push_options(a) -> dict:
    """DefaultRequestHandler's push arguments: none without --push."""
    if not a.push:
        return {}
    import httpx
    from a2a.server.tasks import (
        BasePushNotificationSender, InMemoryPushNotificationConfigStore,
    )

    store = InMemoryPushNotificationConfigStore()
    sender = BasePushNotificationSender(httpx.AsyncClient(timeout=10), store)
    return {'push_config_store': store, 'push_sender': sender}


def make_card(a, name: str, ifaces) -> AgentCard:
    capabilities = AgentCapabilities(streaming=True)
    if a.push:
        capabilities.push_notifications = True
    return AgentCard(
        name=name, description='echo agent (a2a-sdk 1.x)', version='1.0.0',
        supported_interfaces=ifaces,
        capabilities=capabilities,
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id=a.skill, name=a.skill, description='echoes',
                           tags=['echo'])],
    )


async def serve_grpc(a) -> None:
    import grpc
    from a2a.server.request_handlers import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    server = grpc.aio.server()
    grpc_port = server.add_insecure_port('127.0.0.1:0')
    ifaces = [AgentInterface(url=f'127.0.0.1:{grpc_port}', protocol_binding='GRPC',
                             protocol_version='1.0')]
    card = make_card(a, 'echo-v1-grpc', ifaces)
    handler = DefaultRequestHandler(EchoExecutor(a.skill, a.push_delay), InMemoryTaskStore(), card,
                                    **push_options(a))
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    await server.start()
    config = uvicorn.Config(Starlette(routes=create_agent_card_routes(card, card_signer(a))),
                            host='127.0.0.1', port=a.port, log_level='warning')
    await uvicorn.Server(config).serve()
    await server.stop(None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--skill', default='echo',
                    help='skill id (distinct per agent so a fleet can route)')
    ap.add_argument('--compat', action='store_true')
    ap.add_argument('--rest', action='store_true')
    ap.add_argument('--grpc', action='store_true')
    ap.add_argument('--sign-key', metavar='PEM',
                    help='sign the served card with this ES256 private key (PEM)')
    ap.add_argument('--sign-kid', metavar='KID', help='the kid of --sign-key')
    ap.add_argument('--sign-jku', metavar='URL', help='a jku for the protected header')
    ap.add_argument('--push', action='store_true',
                    help='push notifications (the SDK\'s in-memory store and sender)')
    ap.add_argument('--push-delay', type=float, default=0.0, metavar='SECONDS',
                    help='with --push: wait this long before completing a task')
    a = ap.parse_args()
    if a.sign_key and not a.sign_kid:
        ap.error('--sign-key needs --sign-kid')
    if a.push_delay and not a.push:
        ap.error('--push-delay needs --push')
    if a.push_delay < 0:
        ap.error('--push-delay must be >= 0')
    if a.grpc:
        asyncio.run(serve_grpc(a))
        return
    url = f'http://127.0.0.1:{a.port}/'
    ifaces = [AgentInterface(url=url, protocol_binding='JSONRPC',
                             protocol_version='1.0')]
    if a.rest:
        ifaces = [AgentInterface(url=f'{url}rest', protocol_binding='HTTP+JSON',
                                 protocol_version='1.0')]
    if a.compat:
        ifaces.append(AgentInterface(url=url, protocol_binding='JSONRPC',
                                     protocol_version='0.3'))
    card = make_card(a, 'echo-v1-rest' if a.rest else 'echo-v1-compat' if a.compat else 'echo-v1',
                     ifaces)
    handler = DefaultRequestHandler(EchoExecutor(a.skill, a.push_delay), InMemoryTaskStore(), card,
                                    **push_options(a))
    card_routes = create_agent_card_routes(card, card_signer(a))
    if a.rest:
        routes = card_routes + create_rest_routes(
            handler, path_prefix='/rest')
    else:
        routes = card_routes + create_jsonrpc_routes(
            handler, '/', enable_v0_3_compat=a.compat)
    uvicorn.run(Starlette(routes=routes), host='127.0.0.1', port=a.port,
                log_level='warning')


if __name__ == '__main__':
    main()
