"""TCK-friendly agent on a2a-sdk 1.3.0 (same SDK/wiring as tests/interop/agents/agent_v1.py).

  python agent_tck.py --port P [--compat] [--rest]

Without --compat: A2A 1.0 JSON-RPC only. With --compat: also 0.3 JSON-RPC on the
same endpoint (enable_v0_3_compat), card advertises both. With --rest: also
HTTP+JSON 1.0 under /rest, which the card lists after JSON-RPC.

Behaviour (what the A2A TCK 0.3 mandatory tests need: a task that stays open
after a blocking message/send, so that tasks/cancel and follow-up messages
with taskId succeed):
  * every message: adds an artifact and leaves the task INPUT_REQUIRED
    (an interrupted, non-terminal state; blocking send returns the Task);
  * messageId starting "test-resubscribe-message-id" (TCK SUT requirement):
    the task stays WORKING for 2*TCK_STREAMING_TIMEOUT seconds, then completes;
  * text containing "complete": the task completes.
  * cancel: the task becomes CANCELED.
"""
import argparse
import asyncio
import os

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes, create_jsonrpc_routes, create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState,
)

STREAM_TIMEOUT = float(os.environ.get('TCK_STREAMING_TIMEOUT', '2.0'))


class TckExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        text = context.get_user_input()
        mid = context.message.message_id if context.message else ''
        if context.current_task is None:
            await event_queue.enqueue_event(new_task(
                context.task_id, context.context_id,
                TaskState.TASK_STATE_SUBMITTED, history=[context.message]))
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        if mid.startswith('test-resubscribe-message-id'):
            await up.start_work()
            await asyncio.sleep(2 * STREAM_TIMEOUT + 1)
            await up.complete(up.new_agent_message([Part(text='done')]))
            return
        await up.add_artifact([Part(text=f'echo: {text}')], name='response')
        if 'complete' in text.lower():
            await up.complete(up.new_agent_message([Part(text=f'echo: {text}')]))
        else:
            await up.requires_input(up.new_agent_message(
                [Part(text=f'echo: {text} (send more)')]))

    async def cancel(self, context: RequestContext, event_queue) -> None:
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        await up.cancel()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--compat', action='store_true')
    ap.add_argument('--rest', action='store_true')
    a = ap.parse_args()
    url = f'http://127.0.0.1:{a.port}/'
    ifaces = [AgentInterface(url=url, protocol_binding='JSONRPC',
                             protocol_version='1.0')]
    if a.compat:
        ifaces.append(AgentInterface(url=url, protocol_binding='JSONRPC',
                                     protocol_version='0.3'))
    if a.rest:
        ifaces.append(AgentInterface(url=f'{url}rest', protocol_binding='HTTP+JSON',
                                     protocol_version='1.0'))
    card = AgentCard(
        name='tck-v1-compat' if a.compat else 'tck-v1',
        description='TCK agent (a2a-sdk 1.x)', version='1.0.0',
        supported_interfaces=ifaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id='tck', name='tck', description='tck agent',
                           tags=['tck'])],
    )
    handler = DefaultRequestHandler(TckExecutor(), InMemoryTaskStore(), card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, '/', enable_v0_3_compat=a.compat)
    if a.rest:
        routes += create_rest_routes(handler, path_prefix='/rest')
    uvicorn.run(Starlette(routes=routes), host='127.0.0.1', port=a.port,
                log_level='warning')


if __name__ == '__main__':
    main()
