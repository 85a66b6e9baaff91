"""Tiny echo agent on a2a-sdk 0.3.x (JSON-RPC binding, protocol 0.3).

  python agent_v03.py --port P [--rest | --grpc] [--skill ID]

Same behaviour as agent_v1.py: "more" -> input-required, else echo+completed.
--rest: HTTP+JSON 0.3 only. --grpc: gRPC 0.3 only (a2a.v1.A2AService, the
SDK's GrpcHandler on grpc.aio) on a port of its own, which the card's url
names as a bare host:port (preferredTransport GRPC); port P serves only the
card.
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


def text_part(s: str) -> Part:
    return Part(root=TextPart(text=s))


class EchoExecutor(AgentExecutor):
    def __init__(self, skill: str):
        self.skill = skill

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
        await up.add_artifact([text_part(f'echo: {text} (by {self.skill})')], name='echo')
        await up.complete(up.new_agent_message([text_part(f'echo: {text} (by {self.skill})')]))

    async def cancel(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        up = TaskUpdater(event_queue, task.id, task.context_id)
        await up.cancel()


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
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id=a.skill, name=a.skill, description='echoes',
                           tags=['echo'])],
    )
    handler = DefaultRequestHandler(EchoExecutor(a.skill), InMemoryTaskStore())
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(card, handler), server)
    await server.start()
    body = card.model_dump(mode='json', by_alias=True, exclude_none=True)

    async def serve_card(_request):
        return JSONResponse(body)

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
    a = ap.parse_args()
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
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id=a.skill, name=a.skill, description='echoes',
                           tags=['echo'])],
    )
    handler = DefaultRequestHandler(EchoExecutor(a.skill), InMemoryTaskStore())
    if a.rest:
        app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler)
    else:
        app = A2AStarletteApplication(agent_card=card, http_handler=handler)
    uvicorn.run(app.build(), host='127.0.0.1', port=a.port, log_level='warning')


if __name__ == '__main__':
    main()
