"""Tiny echo agent on a2a-sdk 0.3.x (JSON-RPC binding, protocol 0.3).

  python agent_v03.py --port P [--rest | --grpc] [--skill ID]
                      [--sign-key PEM --sign-kid KID [--sign-jku URL]]
                      [--push [--push-delay SECONDS]]

Same behaviour as agent_v1.py: "more" -> input-required, else echo+completed.
--rest: HTTP+JSON 0.3 only. --grpc: gRPC 0.3 only (a2a.v1.A2AService, the
SDK's GrpcHandler on grpc.aio) on a port of its own, which the card's url
names as a bare host:port (preferredTransport GRPC); port P serves only the
card.

With --sign-key the agent serves its card signed by the SDK's own signer
(`a2a.utils.signing.create_agent_card_signer`), as an operator of a2a-sdk
0.3.x does it: the signer is the `card_modifier` of the SDK's server app
(A2AStarletteApplication / A2ARESTFastAPIApplication; with --grpc the card
route signs the same way). The key is an ES256 (P-256) private key in PEM;
the protected header is {"alg": "ES256", "kid": KID, "typ": "JOSE"} plus
"jku": URL with --sign-jku. The signer appends to the card it is given, and
the app hands it its own card on every request, so each request signs a copy
(one signature per served card, not one more per request).

With --push the card says capabilities.pushNotifications and the request
handler gets the SDK's own InMemoryPushNotificationConfigStore and
BasePushNotificationSender (an httpx.AsyncClient): a push config set on
message/send (or tasks/pushNotificationConfig/set) is stored, and the SDK
POSTs the task (a 0.3 Task JSON, "kind": "task") to its url, with the
config's token in X-A2A-Notification-Token (0.3.26 sends no Authorization,
even when the config has authentication). Without --push nothing changes.
With --push-delay SECONDS (only with --push) a task that will complete first
waits that long, after it is submitted and before its artifact and
completion, as in agent_v1.py. Without it the agent does not wait.
"""
import argparse
import asyncio

import uvicorn

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.apps.rest.fastapi_app import A2ARESTFastAPIApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
from a2a.utils import new_task


def capabilities(a) -> AgentCapabilities:
    if a.push:
        return AgentCapabilities(streaming=True, push_notifications=True)
    return AgentCapabilities(streaming=True)


def make_handler(a) -> DefaultRequestHandler:
    """The request handler, with the SDK's push store and sender with --push."""
    if not a.push:
        return DefaultRequestHandler(EchoExecutor(a.skill), InMemoryTaskStore())
    import httpx
    from a2a.server.tasks import (
        BasePushNotificationSender, InMemoryPushNotificationConfigStore,
    )

    store = InMemoryPushNotificationConfigStore()
    sender = BasePushNotificationSender(httpx.AsyncClient(timeout=10), store)
    return DefaultRequestHandler(EchoExecutor(a.skill, a.push_delay), InMemoryTaskStore(),
                                 push_config_store=store, push_sender=sender)


def text_part(s: str) -> Part:
    return Part(root=TextPart(text=s))


class EchoExecutor(AgentExecutor):
    def __init__(self, skill: str, delay: float = 0.0):
        self.skill, self.delay = skill, delay

    async def execute(self, context: RequestContext, event_queue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        if 'more' in text:
            await up.requires_input(up.new_agent_message(
                [text_part(f'need more input (by {self.skill})')]))
            return
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        await up.add_artifact([text_part(f'echo: {text} (by {self.skill})')], name='echo')
        await up.complete(up.new_agent_message([text_part(f'echo: {text} (by {self.skill})')]))

    async def cancel(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        up = TaskUpdater(event_queue, task.id, task.context_id)
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
    return lambda card: sign(card.model_copy(deep=True))


async def serve_grpc(a) -> None:
    import grpc
    from a2a.grpc import a2a_pb2_grpc
    from a2a.server.request_handlers import GrpcHandler
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    server = grpc.aio.server()
    grpc_port = server.add_insecure_port('127.0.0.1:0')
    card = AgentCard(
        name='echo-v03-grpc', description='echo agent (a2a-sdk 0.3.x)',
        url=f'127.0.0.1:{grpc_port}', version='1.0.0', protocol_version='0.3.0',
        preferred_transport='GRPC',
        capabilities=capabilities(a),
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id=a.skill, name=a.skill, description='echoes',
                           tags=['echo'])],
    )
    handler = make_handler(a)
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(card, handler), server)
    await server.start()
    sign = card_signer(a)

    async def serve_card(_request):
        served = sign(card) if sign else card
        return JSONResponse(served.model_dump(mode='json', by_alias=True, exclude_none=True))

    app = Starlette(routes=[Route('/.well-known/agent-card.json', serve_card)])
    config = uvicorn.Config(app, host='127.0.0.1', port=a.port, log_level='warning')
    await uvicorn.Server(config).serve()
    await server.stop(None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--skill', default='echo',
                    help='skill id (distinct per agent so a fleet can route)')
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
    card = AgentCard(
        name='echo-v03-rest' if a.rest else 'echo-v03',
        description='echo agent (a2a-sdk 0.3.x)',
        # The REST client appends /v1/...: no trailing slash there.
        url=f'http://127.0.0.1:{a.port}' + ('' if a.rest else '/'),
        version='1.0.0',
        protocol_version='0.3.0',
        preferred_transport='HTTP+JSON' if a.rest else 'JSONRPC',
        capabilities=capabilities(a),
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id=a.skill, name=a.skill, description='echoes',
                           tags=['echo'])],
    )
    handler = make_handler(a)
    sign = card_signer(a)
    if a.rest:
        app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler,
                                        card_modifier=sign)
    else:
        app = A2AStarletteApplication(agent_card=card, http_handler=handler,
                                      card_modifier=sign)
    uvicorn.run(app.build(), host='127.0.0.1', port=a.port, log_level='warning')


if __name__ == '__main__':
    main()
