"""Push-notification client, on whichever a2a-sdk its venv has (1.x or 0.3.x):

  python push_client.py BASE WEBHOOK TOKEN [--shape 1.0|0.3] [--auth SCHEME:CREDS]
                        [--name LABEL] [--wait SECONDS]
                        [--send-only | --wait-only TASK_ID [--after T]]

BASE is an agent or the gateway's /agents/NAME (the card is read at
BASE/.well-known/agent-card.json); WEBHOOK is a URL on receiver.py
(http://127.0.0.1:PORT/hook/PAIR), whose records this client reads at
http://127.0.0.1:PORT/received?path=/hook/PAIR.

1. Sends one message ("hello push", blocking, the SDK's JSON-RPC transport)
   with a push config {url: WEBHOOK, token: TOKEN} (plus authentication
   SCHEME/CREDS with --auth), the SDK's own way: 1.x puts it in
   SendMessageConfiguration.task_push_notification_config, 0.3.x in
   ClientConfig.push_notification_configs. The task must complete.
2. Lists the task's push configs (1.x: the SDK's list call; 0.3.26's client
   has none, so a JSON-RPC tasks/pushNotificationConfig/list on the card's
   url) and gets the one listed (1.x: GetTaskPushNotificationConfigRequest,
   0.3.x: get_task_callback). Each must show WEBHOOK (nothing under /push/),
   and the token, if shown at all, must be TOKEN.
3. Polls the receiver (--wait, default 15 s) until the notification with the
   completed task arrives. Then every notification POSTed to WEBHOOK must carry
   X-A2A-Notification-Token: TOKEN (and Authorization: SCHEME CREDS with
   --auth), and be in the --shape (default: the SDK's own version):
   0.3: a Task object, "kind": "task", "id" the task's id, a lower-case state;
   1.0: a StreamResponse object, one of "task" / "statusUpdate" /
   "artifactUpdate" with the task's id, states TASK_STATE_*.

Prints one "PASS  ..." or "FAIL  ..." line per check, and "TASK ID" (the
task's id); exit 1 on any FAIL.

The same run in two halves, for a gateway replica killed in between:
--send-only does 1 NON-blocking (1.x: SendMessageConfiguration.
return_immediately; 0.3.x: ClientConfig.polling, i.e. blocking: false), which
must return the task not yet completed (submitted or working), and 2; then it
prints "TASK ID" and exits. --wait-only TASK_ID does only 3, for that task
(BASE is not contacted); with --after T (seconds on the receiver's clock, GET
/now) the completed task must also have been received after T.

  python push_client.py --agent-side AGENT_BASE TASK_ID CALLBACK_PREFIX TOKEN [--name LABEL]

The relay seen from the agent (behind a gateway; run it in the venv of the
agent's SDK, which talks to the agent directly): the push configs the agent
holds for TASK_ID must all be callbacks under CALLBACK_PREFIX
(http://GW/push/), none with the client's TOKEN.
"""
import argparse
import asyncio
import importlib.metadata
import json
import sys
import time
import uuid
from urllib.parse import urlsplit

import httpx

SDK = importlib.metadata.version('a2a-sdk')
V03 = SDK.startswith('0.')
OP_TIMEOUT = 15.0
STATES_03 = {'submitted', 'working', 'input-required', 'completed', 'canceled',
             'failed', 'rejected', 'auth-required', 'unknown'}
EVENTS_10 = ('task', 'statusUpdate', 'artifactUpdate', 'message')


class Checks:
    def __init__(self, name: str):
        self.name, self.failed = name, 0

    def check(self, ok: bool, what: str, why: str = '') -> bool:
        if ok:
            print(f'PASS  {self.name}: {what}', flush=True)
        else:
            self.failed += 1
            print(f'FAIL  {self.name}: {what}' + (f' ({why})' if why else ''), flush=True)
        return ok


def err(e: BaseException) -> str:
    lines = f'{type(e).__name__}: {e}'.strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:300]


# --- a2a-sdk 1.x ------------------------------------------------------------
class Sdk1:
    def __init__(self, http, card, webhook, token, auth, blocking=True):
        from a2a.client import ClientConfig, ClientFactory
        from a2a.types import AuthenticationInfo, TaskPushNotificationConfig

        self.blocking = blocking
        self.client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        self.config = TaskPushNotificationConfig(url=webhook, token=token)
        if auth:
            self.config.authentication.CopyFrom(
                AuthenticationInfo(scheme=auth[0], credentials=auth[1]))

    async def send(self, text: str) -> tuple[str, str]:
        """(task id, state in lower case) of a message/send (blocking unless
        told otherwise: then with return_immediately)."""
        from a2a.types import (
            Message, Part, Role, SendMessageConfiguration, SendMessageRequest, TaskState,
        )

        msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
        req = SendMessageRequest(message=msg, configuration=SendMessageConfiguration(
            task_push_notification_config=self.config,
            return_immediately=not self.blocking))
        tid, state = '', ''
        async for ev in self.client.send_message(req):
            if ev.HasField('task'):
                tid = ev.task.id
                state = TaskState.Name(ev.task.status.state)
        return tid, norm_state(state)

    async def list_configs(self, tid: str) -> list[dict]:
        from a2a.types import ListTaskPushNotificationConfigsRequest

        resp = await self.client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=tid))
        return [{'id': c.id, 'url': c.url, 'token': c.token} for c in resp.configs]

    async def get_config(self, tid: str, config_id: str) -> dict:
        from a2a.types import GetTaskPushNotificationConfigRequest

        c = await self.client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=tid, id=config_id))
        return {'id': c.id, 'url': c.url, 'token': c.token}


# --- a2a-sdk 0.3.x ----------------------------------------------------------
class Sdk03:
    def __init__(self, http, card, webhook, token, auth, blocking=True):
        from a2a.client import ClientConfig, ClientFactory
        from a2a.types import PushNotificationAuthenticationInfo, PushNotificationConfig

        config = PushNotificationConfig(url=webhook, token=token)
        if auth:
            config.authentication = PushNotificationAuthenticationInfo(
                schemes=[auth[0]], credentials=auth[1])
        self.http, self.url = http, card.url
        # polling=True: the SDK sends configuration.blocking = false.
        self.client = ClientFactory(ClientConfig(
            streaming=False, polling=not blocking, httpx_client=http,
            push_notification_configs=[config])).create(card)

    async def send(self, text: str) -> tuple[str, str]:
        from a2a.types import Message, Part, Role, Task, TextPart

        msg = Message(message_id=str(uuid.uuid4()), role=Role.user,
                      parts=[Part(root=TextPart(text=text))])
        tid, state = '', ''
        async for ev in self.client.send_message(msg):
            if isinstance(ev, tuple) and isinstance(ev[0], Task):
                tid, state = ev[0].id, ev[0].status.state.value
        return tid, norm_state(state)

    async def list_configs(self, tid: str) -> list[dict]:
        # a2a-sdk 0.3.26's Client has no list call: JSON-RPC by hand.
        r = await self.http.post(self.url, json={
            'jsonrpc': '2.0', 'id': str(uuid.uuid4()),
            'method': 'tasks/pushNotificationConfig/list', 'params': {'id': tid}})
        doc = r.json()
        if 'result' not in doc:
            raise RuntimeError(f'HTTP {r.status_code}: {json.dumps(doc)[:300]}')
        out = []
        for c in doc['result']:
            p = c.get('pushNotificationConfig') or {}
            out.append({'id': p.get('id') or '', 'url': p.get('url'), 'token': p.get('token') or ''})
        return out

    async def get_config(self, tid: str, config_id: str) -> dict:
        from a2a.types import GetTaskPushNotificationConfigParams

        c = await self.client.get_task_callback(GetTaskPushNotificationConfigParams(
            id=tid, push_notification_config_id=config_id or None))
        p = c.push_notification_config
        return {'id': p.id or '', 'url': p.url, 'token': p.token or ''}


def norm_state(s) -> str:
    s = str(s).lower()
    return s[len('task_state_'):].replace('_', '-') if s.startswith('task_state_') else s


# --- the notifications --------------------------------------------------------
def task_of(body, shape: str) -> tuple[str, str, str]:
    """(task id, state, problem) of one notification body in the given shape;
    problem is '' when the body is in that shape."""
    if not isinstance(body, dict):
        return '', '', 'not a JSON object'
    if shape == '0.3':
        if body.get('kind') != 'task':
            return '', '', f'kind {body.get("kind")!r}, keys {sorted(body)[:8]}'
        state = (body.get('status') or {}).get('state', '')
        if state not in STATES_03:
            return body.get('id', ''), state, f'state {state!r} is not a 0.3 state'
        return body.get('id', ''), state, ''
    keys = [k for k in EVENTS_10 if k in body]
    if len(keys) != 1 or 'kind' in body:
        return '', '', f'not a StreamResponse: keys {sorted(body)[:8]}'
    ev = body[keys[0]]
    if keys[0] == 'message' or not isinstance(ev, dict):
        return '', '', f'a {keys[0]} event'
    tid = ev.get('id', '') if keys[0] == 'task' else ev.get('taskId', '')
    state = (ev.get('status') or {}).get('state', '')
    if state and not state.startswith('TASK_STATE_'):
        return tid, state, f'state {state!r} is not a 1.0 state'
    return tid, state, ''


def completed(body, shape: str, tid: str) -> bool:
    got, state, problem = task_of(body, shape)
    return not problem and got == tid and state in ('completed', 'TASK_STATE_COMPLETED')


async def received(http, webhook: str, wait: float, shape: str, tid: str) -> list[dict]:
    """The receiver's records for WEBHOOK's path, once the completed one is
    there (then half a second more, for stragglers) or after WAIT seconds."""
    u = urlsplit(webhook)
    url = f'{u.scheme}://{u.netloc}/received'
    deadline = time.monotonic() + wait
    records: list[dict] = []
    while True:
        try:
            r = await http.get(url, params={'path': u.path}, timeout=2)
            records = r.json()
        except Exception:  # noqa: BLE001 - keep polling until the deadline
            pass
        if any(completed(x.get('body'), shape, tid) for x in records):
            await asyncio.sleep(0.5)
            r = await http.get(url, params={'path': u.path}, timeout=2)
            return r.json()
        if time.monotonic() >= deadline:
            return records
        await asyncio.sleep(0.25)


async def agent_side(a) -> int:
    c = Checks(a.name or f'agent {a.base}')
    async with httpx.AsyncClient(timeout=10) as http:
        try:
            from a2a.client import A2ACardResolver
            card = await A2ACardResolver(http, a.base).get_agent_card()
            sdk = (Sdk03 if V03 else Sdk1)(http, card, 'http://unused.invalid/', '', None)
            cfgs = await asyncio.wait_for(sdk.list_configs(a.task), OP_TIMEOUT)
        except Exception as e:  # noqa: BLE001
            c.check(False, f'list the agent\'s own push configs for task {a.task}', err(e))
            return 1
        urls = [x['url'] for x in cfgs]
        c.check(bool(cfgs) and all((u or '').startswith(a.prefix) for u in urls),
                f'the agent holds only callbacks under {a.prefix} for task {a.task}', f'holds {urls}')
        c.check(all(x['token'] and x['token'] != a.token for x in cfgs),
                'the agent\'s callback token is its own (not the client\'s, not empty)',
                f'tokens {[x["token"] for x in cfgs]}')
    return 1 if c.failed else 0


async def main(a) -> int:
    c = Checks(a.name or f'sdk {SDK} -> {a.base}')
    auth = tuple(a.auth.split(':', 1)) if a.auth else None
    shape = a.shape or ('0.3' if V03 else '1.0')
    async with httpx.AsyncClient(timeout=10) as http:
        if a.wait_only:
            await check_received(c, http, a, auth, shape, a.wait_only)
            return 1 if c.failed else 0
        blocking = not a.send_only
        try:
            from a2a.client import A2ACardResolver
            card = await A2ACardResolver(http, a.base).get_agent_card()
            sdk = (Sdk03 if V03 else Sdk1)(http, card, a.webhook, a.token, auth, blocking)
        except Exception as e:  # noqa: BLE001
            c.check(False, 'card and client', err(e))
            return 1

        try:
            tid, state = await asyncio.wait_for(sdk.send('hello push'), OP_TIMEOUT)
            if blocking:
                c.check(bool(tid) and state == 'completed',
                        f'message/send with a push config: task {tid} {state}',
                        'want a completed task')
            else:
                c.check(bool(tid) and state in ('submitted', 'working'),
                        f'non-blocking message/send with a push config: task {tid} {state}',
                        'want a task not yet completed (submitted or working)')
            print(f'TASK {tid}', flush=True)
        except Exception as e:  # noqa: BLE001
            c.check(False, 'message/send with a push config', err(e))
            return 1

        def shows_webhook(what: str, cfgs: list[dict]) -> None:
            bad = [x['url'] for x in cfgs if x['url'] != a.webhook or '/push/' in (x['url'] or '')]
            c.check(bool(cfgs) and not bad, f'{what} shows the webhook {a.webhook}',
                    f'shows {[x["url"] for x in cfgs]}')
            wrong = [x['token'] for x in cfgs if x['token'] and x['token'] != a.token]
            c.check(not wrong, f'{what} shows the client\'s token or none',
                    f'shows {wrong}')

        config_id = ''
        try:
            cfgs = await asyncio.wait_for(sdk.list_configs(tid), OP_TIMEOUT)
            shows_webhook('list push configs', cfgs)
            config_id = cfgs[0]['id'] if cfgs else ''
        except Exception as e:  # noqa: BLE001
            c.check(False, 'list push configs', err(e))
        try:
            cfg = await asyncio.wait_for(sdk.get_config(tid, config_id or tid), OP_TIMEOUT)
            shows_webhook(f'get push config {config_id or tid}', [cfg])
        except Exception as e:  # noqa: BLE001
            c.check(False, f'get push config {config_id or tid}', err(e))

        if not a.send_only:
            await check_received(c, http, a, auth, shape, tid)
    return 1 if c.failed else 0


async def check_received(c: Checks, http, a, auth, shape: str, tid: str) -> None:
    """Step 3: the notifications for TID at the webhook."""
    records = await received(http, a.webhook, a.wait, shape, tid)
    path = urlsplit(a.webhook).path
    c.check(any(completed(x.get('body'), shape, tid) for x in records),
            f'the completed task was pushed to {path} ({len(records)} notification(s))',
            f'not within {a.wait:g} s; bodies: '
            f'{[json.dumps(x.get("body", x.get("raw")))[:160] for x in records][:3]}')
    if not records:
        return
    if a.after is not None:
        times = [x.get('t') for x in records if completed(x.get('body'), shape, tid)]
        c.check(bool(times) and all(t is not None and t > a.after for t in times),
                f'the completed task was received after t={a.after:g} s',
                f'received at t={times}')

    tokens = [x['headers'].get('x-a2a-notification-token') for x in records]
    c.check(all(t == a.token for t in tokens),
            'every notification has X-A2A-Notification-Token: TOKEN', f'got {tokens}')
    if auth:
        want = f'{auth[0]} {auth[1]}'
        got = [x['headers'].get('authorization') for x in records]
        c.check(all(g == want for g in got),
                f'every notification has Authorization: {want}', f'got {got}')
    problems = []
    for x in records:
        got, _, problem = task_of(x.get('body'), shape)
        if problem or got != tid:
            problems.append(problem or f'task id {got!r}, not {tid!r}')
    kinds = sorted({(next((k for k in EVENTS_10 if k in x.get('body', {})), '')
                     if shape == '1.0' else x.get('body', {}).get('kind', ''))
                    for x in records if isinstance(x.get('body'), dict)})
    c.check(not problems, f'every notification is a {shape} {"StreamResponse" if shape == "1.0" else "Task"}'
            f' of task {tid} ({", ".join(kinds)})', '; '.join(problems[:3]))


if __name__ == '__main__':
    if sys.argv[1:2] == ['--agent-side']:
        ap = argparse.ArgumentParser(prog='push_client.py --agent-side')
        for arg in ('base', 'task', 'prefix', 'token'):
            ap.add_argument(arg)
        ap.add_argument('--name', default='')
        sys.exit(asyncio.run(agent_side(ap.parse_args(sys.argv[2:]))))
    ap = argparse.ArgumentParser()
    ap.add_argument('base')
    ap.add_argument('webhook')
    ap.add_argument('token')
    ap.add_argument('--shape', choices=['1.0', '0.3'],
                    help='the notification bodies expected (default: this SDK\'s version)')
    ap.add_argument('--auth', metavar='SCHEME:CREDS',
                    help='authentication in the push config, and the Authorization expected')
    ap.add_argument('--name', default='', help='label for the PASS/FAIL lines')
    ap.add_argument('--wait', type=float, default=15.0, help='seconds to wait for the push')
    half = ap.add_mutually_exclusive_group()
    half.add_argument('--send-only', action='store_true',
                      help='a non-blocking send, the config checks, and no wait')
    half.add_argument('--wait-only', metavar='TASK_ID',
                      help='only the wait for TASK_ID\'s notifications')
    ap.add_argument('--after', type=float, metavar='T',
                    help='with --wait-only: the completed task must be received after T '
                         '(seconds on the receiver\'s clock)')
    args = ap.parse_args()
    if args.after is not None and not args.wait_only:
        ap.error('--after needs --wait-only')
    sys.exit(asyncio.run(main(args)))
