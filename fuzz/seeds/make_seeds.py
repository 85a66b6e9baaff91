#!/usr/bin/env python3
"""Writes the committed seed corpus under fuzz/seeds/<target>/.

Seeds are real A2A traffic of every protocol version (0.1, 0.2/0.3, 1.0),
the bad-input classes of docs/bad-input.md, Agent Cards of 0.2/0.3/1.0
shapes, SSE streams of each version and the shipped configurations.
Re-run after changing it:  python3 fuzz/seeds/make_seeds.py
"""

import json
import os
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def write(target, name, data):
    d = HERE / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / name).write_bytes(data)


def rpc(raw_id, method, params=None):
    body = '{"jsonrpc":"2.0","id":%s,"method":"%s"' % (raw_id, method)
    if params is not None:
        body += ',"params":' + json.dumps(params, separators=(",", ":"), ensure_ascii=False)
    return body + "}"


# ----------------------------------------------------------------- messages

MSG01 = {"role": "user", "parts": [{"type": "text", "text": "a flight to Lisbon"}],
         "metadata": {"skillId": "book-flight"}}
MSG03 = {"kind": "message", "messageId": "m1", "role": "user",
         "parts": [{"kind": "text", "text": "will it rain in Paris tomorrow? weather forecast please"},
                   {"kind": "data", "data": {"city": "Paris", "days": [1, 2]}},
                   {"kind": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGk="}}],
         "metadata": {"skillId": "forecast"}}
MSG03_FOLLOWUP = {"kind": "message", "messageId": "m4", "role": "user", "taskId": "travel-task-1",
                  "contextId": "travel-ctx-1", "parts": [{"kind": "text", "text": "next Friday"}]}
MSG10 = {"messageId": "m3", "role": "ROLE_USER", "contextId": "weather-ctx-2",
         "parts": [{"text": "Berlin this weekend"}, {"data": {"unit": "C"}},
                   {"url": "https://example.com/f.png", "mediaType": "image/png"}],
         "metadata": {"skillId": "forecast"}}

front = {
    # 0.1
    "v01_tasks_send": rpc("1", "tasks/send", {"id": "t-1", "sessionId": "s-1", "message": MSG01}),
    "v01_tasks_sendSubscribe": rpc('"s1"', "tasks/sendSubscribe",
                                   {"id": "t-2", "sessionId": "s-1", "message": MSG01}),
    "v01_tasks_get": rpc("2", "tasks/get", {"id": "t-1", "historyLength": 3}),
    "v01_push_set": rpc("3", "tasks/pushNotification/set",
                        {"id": "t-1", "pushNotificationConfig": {"url": "https://hooks.example.com/a2a"}}),
    "v01_push_get": rpc("4", "tasks/pushNotification/get", {"id": "t-1"}),
    # 0.2 / 0.3
    "v03_message_send": rpc("1", "message/send", {"message": MSG03}),
    "v03_message_send_followup": rpc("4", "message/send", {"message": MSG03_FOLLOWUP}),
    "v03_message_stream": rpc('"stream-1"', "message/stream",
                              {"message": MSG03, "configuration": {"acceptedOutputModes": ["text/plain"],
                                                                   "historyLength": 2, "blocking": False}}),
    "v03_tasks_get": rpc("1.50", "tasks/get", {"id": "weather-task-1"}),
    "v03_tasks_cancel": rpc("-0", "tasks/cancel", {"id": "weather-task-1"}),
    "v03_tasks_resubscribe": rpc("12345678901234567890123", "tasks/resubscribe", {"id": "weather-task-1"}),
    "v03_push_set": rpc("5", "tasks/pushNotificationConfig/set",
                        {"taskId": "t", "pushNotificationConfig": {"url": "https://hooks.example.com/x",
                                                                   "token": "tok", "id": "p1"}}),
    "v03_push_get": rpc("6", "tasks/pushNotificationConfig/get", {"id": "t"}),
    "v03_push_list": rpc("7", "tasks/pushNotificationConfig/list", {"id": "t"}),
    "v03_push_delete": rpc("8", "tasks/pushNotificationConfig/delete",
                           {"id": "t", "pushNotificationConfigId": "p1"}),
    "v03_extended_card": rpc("9", "agent/getAuthenticatedExtendedCard"),
    # 1.0
    "v10_send_message": rpc('"a\\u0041"', "SendMessage", {"message": MSG10,
                                                          "configuration": {"acceptedOutputModes": ["text/plain"]}}),
    "v10_send_streaming": rpc("3", "SendStreamingMessage", {"message": MSG10}),
    "v10_get_task": rpc("1", "GetTask", {"id": "t1", "historyLength": 0}),
    "v10_list_tasks": rpc("1", "ListTasks", {"contextId": "c1", "pageSize": 10}),
    "v10_list_tasks_no_params": rpc("null", "ListTasks"),
    "v10_cancel_task": rpc("1", "CancelTask", {"id": "t1"}),
    "v10_subscribe": rpc("1", "SubscribeToTask", {"id": "t1"}),
    "v10_push_create": rpc("1", "CreateTaskPushNotificationConfig",
                           {"taskId": "t1", "url": "https://hooks.example.com/y"}),
    "v10_push_get": rpc("1", "GetTaskPushNotificationConfig", {"taskId": "t1", "id": "p1"}),
    "v10_push_list": rpc("1", "ListTaskPushNotificationConfigs", {"taskId": "t1"}),
    "v10_push_delete": rpc("1", "DeleteTaskPushNotificationConfig", {"taskId": "t1", "id": "p1"}),
    "v10_extended_card": rpc("1", "GetExtendedAgentCard", {}),
    # bad input
    "bad_parse": '{"jsonrpc":"2.0","id":1,',
    "bad_trailing": rpc("1", "tasks/get", {"id": "t"}) + " trailing",
    "bad_batch": "[" + rpc("1", "tasks/get", {"id": "t"}) + "]",
    "bad_empty_batch": "[]",
    "bad_jsonrpc": '{"jsonrpc":"1.0","id":"a","method":"message/send","params":{}}',
    "bad_id_object": '{"jsonrpc":"2.0","id":{"bad":1},"method":"message/send","params":{}}',
    "bad_method_type": '{"jsonrpc":"2.0","id":7,"method":42}',
    "bad_params_type": '{"jsonrpc":"2.0","id":"p","method":"message/send","params":"hello"}',
    "bad_dup_member": '{"jsonrpc":"2.0","id":1,"id":2,"method":"tasks/get","params":{"id":"t"}}',
    "bad_dup_params": rpc("1", "tasks/pushNotificationConfig/set", {"taskId": "t"})[:-2]
                      + ',"pushNotificationConfig":{"url":"https://a","url":"http://10.0.0.1"}}}',
    "bad_unknown_method": rpc("1", "sendmessage", {}),
    "bad_method_escapes": '{"jsonrpc":"2.0","id":5,"method":"a\\"b\\n\\u0000c"}',
    "bad_notification": '{"jsonrpc":"2.0","method":"nope/nothing","params":{}}',
    "bad_params_missing": rpc("1", "message/send"),
    "bad_parts_empty": rpc("5", "message/send", {"message": {"role": "user", "messageId": "m", "parts": []}}),
    "bad_role": rpc("8", "message/send", {"message": {"role": "boss", "messageId": "m", "parts": [{}]}}),
    "bad_history": rpc("16", "tasks/get", {"id": "t", "historyLength": -1}),
    "deep_data": rpc('"deep"', "message/send", {"message": {"kind": "message", "messageId": "m", "role": "user",
                                                            "parts": [{"kind": "data", "data": {"v": 1}}]}})
                 .replace('{"v":1}', '{"v":' + "[" * 200 + "1" + "]" * 200 + "}"),
    "unicode_text": rpc("1", "message/send", {"message": {"kind": "message", "messageId": "m", "role": "user",
                                                          "parts": [{"kind": "text",
                                                                     "text": "Wetter in München? İstanbul ﬁ ﬂight ✈️ 東京"}]}}),
}
for name, body in front.items():
    write("jsonrpc_front_door", name + ".json", body)

# -------------------------------------------------------------------- cards

URL = "http://10.0.0.5:9001"
card02 = {"name": "Weather (0.2)", "description": "Forecasts", "url": URL + "/", "version": "0.2.0",
          "capabilities": {"streaming": True, "pushNotifications": False},
          "defaultInputModes": ["text"], "defaultOutputModes": ["text"],
          "skills": [{"id": "forecast", "name": "Weather forecast", "description": "Forecasts the weather",
                      "tags": ["weather", "forecast"], "examples": ["will it rain in Paris?"]}]}
card03 = {"name": "Travel", "description": "Books flights", "version": "1.0.0", "protocolVersion": "0.3.0",
          "url": URL + "/", "preferredTransport": "JSONRPC",
          "additionalInterfaces": [{"url": URL + "/", "transport": "JSONRPC"},
                                   {"url": URL + "/rest", "transport": "HTTP+JSON"},
                                   {"url": "10.0.0.5:50051", "transport": "GRPC"}],
          "provider": {"organization": "Example", "url": "https://example.com"},
          "capabilities": {"streaming": False, "stateTransitionHistory": True,
                           "extensions": [{"uri": "https://ext.example/x", "required": False}]},
          "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
          "security": [{"bearer": []}],
          "supportsAuthenticatedExtendedCard": True,
          "signatures": [{"protected": "e30", "signature": "abc"}],
          "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain", "application/json"],
          "skills": [{"id": "book-flight", "name": "Flight booking", "description": "Books a flight",
                      "tags": ["travel", "flight"], "examples": ["book a plane ticket to Rome"]},
                     {"id": "forecast", "name": "Travel weather", "description": "Weather at the destination",
                      "tags": ["weather"]}]}
card10 = {"name": "Echo (1.0)", "description": "Echoes", "version": "2.0.0",
          "supportedInterfaces": [{"url": URL + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0",
                                   "tenant": "t1"},
                                  {"url": URL + "/a2a/v1", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                                  {"url": URL + "/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
          "capabilities": {"streaming": True, "pushNotifications": True, "extendedAgentCard": True},
          "securitySchemes": {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}},
          "securityRequirements": [{"schemes": {"key": {"list": []}}}],
          "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
          "skills": [{"id": "echo", "name": "Echo", "description": "Echoes text back", "tags": ["echo"]},
                     {"id": "alpha/forecast", "name": "Literal prefixed id", "description": "", "tags": []},
                     {"id": "echo", "name": "Repeated id", "description": "kept first"},
                     {"name": "no id"}, 7, {"id": ""}]}
sloppy = {"name": 5, "skills": {"id": "x"}, "capabilities": [], "additionalInterfaces": "x",
          "supportedInterfaces": [1, "x", {"protocolBinding": "jsonrpc"}]}


def cj(v):
    return json.dumps(v, separators=(",", ":")).encode()


cards = {
    "one_03": bytes([0]) + cj(card03),
    "one_10": bytes([0]) + cj(card10),
    "one_02": bytes([0]) + cj(card02),
    "two_collide": bytes([0]) + cj(card02) + b"\xff" + cj(card03),
    "three_all": bytes([0]) + cj(card02) + b"\xff" + cj(card03) + b"\xff" + cj(card10),
    "three_policies": bytes([0b0111_1101]) + cj(card03) + b"\xff" + cj(card10) + b"\xff" + cj(card02),
    "rename_shared": bytes([0b1100]) + cj(card03) + b"\xff" + cj(card10),
    "rename_onto_own": bytes([0b1000]) + cj(card03) + b"\xff" + cj(card02),
    "sloppy": bytes([3]) + cj(sloppy) + b"\xff" + cj(card02),
    "not_objects": bytes([0]) + b"[1,2]" + b"\xff" + b"null" + b"\xff" + b'"card"',
}
for name, data in cards.items():
    write("card_aggregation", name + ".bin", data)

# ---------------------------------------------------------------------- SSE


def sse_stream(events, sep="\n"):
    out = ""
    for e in events:
        out += "data: " + json.dumps(e, separators=(",", ":")) + sep + sep
    return out


def res(raw_id, result):
    return {"jsonrpc": "2.0", "id": raw_id, "result": result}


v01 = [res(1, {"id": "t-1", "status": {"state": "working"}, "final": False}),
       res(1, {"id": "t-1", "artifact": {"parts": [{"type": "text", "text": "Forecast"}], "index": 0}}),
       res(1, {"id": "t-1", "status": {"state": "completed"}, "final": True})]
v03 = [res("s", {"kind": "status-update", "taskId": "weather-task-1", "contextId": "weather-ctx-1",
                 "status": {"state": "working"}, "final": False}),
       res("s", {"kind": "artifact-update", "taskId": "weather-task-1", "contextId": "weather-ctx-1",
                 "artifact": {"artifactId": "answer", "parts": [{"kind": "text", "text": "sunny, 21°C"}]},
                 "append": False, "lastChunk": True}),
       res("s", {"kind": "status-update", "taskId": "weather-task-1", "contextId": "weather-ctx-1",
                 "status": {"state": "input-required"}, "final": True})]
v10 = [res(3, {"task": {"id": "weather-task-2", "contextId": "weather-ctx-2",
                        "status": {"state": "TASK_STATE_SUBMITTED"}}}),
       res(3, {"statusUpdate": {"taskId": "weather-task-2", "contextId": "weather-ctx-2",
                                "status": {"state": "TASK_STATE_WORKING"}}}),
       res(3, {"artifactUpdate": {"taskId": "weather-task-2", "contextId": "weather-ctx-2",
                                  "artifact": {"artifactId": "answer", "parts": [{"text": "light wind."}]},
                                  "append": True, "lastChunk": True}}),
       res(3, {"statusUpdate": {"taskId": "weather-task-2", "contextId": "weather-ctx-2",
                                "status": {"state": "TASK_STATE_COMPLETED"}}}),
       res(3, {"message": {"messageId": "x", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}})]
err = {"jsonrpc": "2.0", "id": "s", "error": {"code": -32001, "message": "Task not found"}}

sse = {
    "v01_lf": (0, sse_stream(v01)),
    "v03_lf": (0x03, sse_stream(v03)),
    "v10_lf": (0x05, sse_stream(v10)),
    "v03_crlf": (0x02, sse_stream(v03, "\r\n")),
    "v10_cr": (0x01, sse_stream(v10, "\r")),
    "multiline_comment_event": (0x04, ": keep-alive\n\nevent: message\nid: 7\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\n"
                                      "data: \"id\":1,\"result\":{\"kind\":\"task\",\"id\":\"t\"}}\n\n"),
    "error_event": (0x00, sse_stream([err])),
    "partial_tail": (0x13, sse_stream(v03) + "data: {\"half"),
    "big_event_small_limit": (0x10, sse_stream(v10)),
}
for name, (control, text) in sse.items():
    splits = control & 0x0F
    lengths = bytes([7, 1, 60, 0, 13, 2, 255, 5, 9, 1, 1, 30, 4, 8, 3][:splits])
    write("sse_scanning", name + ".bin", bytes([control]) + lengths + text.encode())

# ------------------------------------------------------ agents' answers

def chunked(text, sizes):
    """`text` as a chunked body in pieces of the given sizes (the rest last)."""
    out, at = "", 0
    for size in sizes + [len(text)]:
        piece = text[at:at + size]
        if piece:
            out += "%x\r\n%s\r\n" % (len(piece.encode()), piece)
        at += size
    return out + "0\r\n\r\n"


SSE_HEAD = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
stream03 = sse_stream(v03)
answers = {
    # what agents send for message/stream: chunked SSE, one event per chunk
    "sse_chunked": (0x04, SSE_HEAD + "transfer-encoding: chunked\r\n\r\n" + chunked(stream03, [40, 90])),
    "sse_chunked_ext_trailers": (0x03, SSE_HEAD + "transfer-encoding: gzip, chunked\r\n\r\n"
                                 + chunked(stream03, [10]).replace("\r\n", ";ext=1\r\n", 1)[:-2]
                                 + "x-trailer: 1\r\n\r\n"),
    "sse_length": (0x02, SSE_HEAD + "content-length: %d\r\n\r\n" % len(stream03.encode()) + stream03),
    "sse_to_close_http10": (0x01, SSE_HEAD.replace("1.1", "1.0") + "\r\n" + stream03),
    "interim_heads": (0x05, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"
                      + SSE_HEAD + "content-length: 5\r\nconnection: keep-alive\r\n\r\nhello"),
    "length_then_more": (0x00, "HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\n\r\nokHTTP/1.1 200 OK\r\n"),
    "no_content": (0x01, "HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n"),
    "error_json": (0x02, "HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\nconnection: close\r\n"
                   "content-length: 55\r\n\r\n" + '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"m":"x"}}'),
    "cut_short": (0x02, SSE_HEAD + "transfer-encoding: chunked\r\n\r\nff\r\ndata: {}"),
    "bad_conflicting_length": (0x00, "HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabcd"),
    "bad_switching": (0x00, "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n"),
    "bad_not_http": (0x01, "SSH-2.0-OpenSSH_9.2\r\n\r\n"),
    # a chunk-size line of exactly the 8 KiB limit (src/upstream/framing.rs),
    # so inputs reach the limit and its split invariance is fuzzed
    "long_chunk_extension": (0x03, SSE_HEAD + "transfer-encoding: chunked\r\n\r\n"
                             + "5;x=" + "y" * (8192 - 6) + "\r\nhello\r\n0\r\n\r\n"),
}
for name, (control, text) in answers.items():
    splits = control & 0x0F
    lengths = bytes([17, 1, 60, 0, 13, 2, 255, 5, 9, 1, 1, 30, 4, 8, 3][:splits])
    write("agent_answer", name + ".bin", bytes([control]) + lengths + text.encode())

# ------------------------------------------------------------------- config

for path in [ROOT / "config/gateway.toml", *sorted((ROOT / "deploy").rglob("gateway.toml"))]:
    rel = path.relative_to(ROOT).as_posix().replace("/", "_")
    write("config_parsing", rel, path.read_bytes())

write("config_parsing", "full_features.toml", """
[server]
listen = "127.0.0.1:8080"
admin_listen = "127.0.0.1:9090"
public_url = "https://agents.example.com/a2a"
shutdown_grace = "5s"

[limits]
max_body_bytes = 1024
header_read_timeout = "500ms"
sse_idle_timeout = "2m"

[routing]
default_upstream = "weather"
metadata_keys = ["skillId", "skill"]

[routing.match]
enabled = true
min_score = 0.5
margin = 0.1

[card]
name = "Fleet"
provider = { organization = "Example", url = "https://example.com" }
extended_card = true

[concurrency]
max_streams = 10
max_streams_per_caller = 2

[rate_limits]
global = { per_second = 100, burst = 200 }
per_caller = { per_minute = 600 }

[push_guard]
allow_http = false
allow_hosts = ["hooks.example.com"]
allow_cidrs = ["203.0.113.0/24"]

[[upstreams]]
name = "weather"
urls = ["http://127.0.0.1:9001", "http://127.0.0.1:9002"]
balance = "round_robin"
max_in_flight = 8
queue = 4
queue_timeout = "100ms"
breaker = { failures = 3, open_for = "10s" }
response_header_timeout = "3s"
headers = { "X-Agent-Key" = { env = "A2A_FUZZ_UNSET_VAR" } }
skills = { include = ["forecast"], rename = { forecast = "weather-forecast" } }

[[upstreams]]
name = "travel"
url = "http://127.0.0.1:9003"
http2 = true
skills = { exclude = ["internal"] }
""")
write("config_parsing", "bad_many.toml", """
[server]
listen = "nowhere"
[[upstreams]]
name = "a b"
url = "ftp://x"
typo = 1
[[upstreams]]
name = "a b"
url = "http://127.0.0.1:1"
[routing]
default_upstream = "missing"
""")
write("config_parsing", "empty.toml", "")
write("config_parsing", "flags_only_upstream.toml", '[[upstreams]]\nname = "echo"\nurl = "http://127.0.0.1:9001"\n')

print("seeds written under", HERE)
