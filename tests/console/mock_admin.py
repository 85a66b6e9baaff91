#!/usr/bin/env python3
"""A stand-in for the gateway's admin listener, for developing the console (issue #68).

Stdlib only. Serves the console's three files from src/console/assets/ with the
Content-Security-Policy of docs/console.md, and fake but realistic answers for every
/admin/ endpoint of that doc. One agent ("evil" by default) is HOSTILE: its card
name, skill text and an error message carry markup that must show up as text.

    python3 tests/console/mock_admin.py --port 8099 [--auth] [--max-seconds 1800]

--auth: every /admin/ request needs a session, opened by POST /admin/session with
{"headers": {"authorization": "Basic dXNlcjpwYXNz"}} (user:pass).
Loopback only; the server stops by itself after --max-seconds.
"""

import argparse
import base64
import json
import os
import random
import re
import secrets
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.normpath(os.path.join(HERE, "..", "..", "src", "console", "assets"))

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

HOSTILE = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    '"><svg onload=window.__xss=1>',
]
H_SCRIPT, H_IMG, H_SVG = HOSTILE

SESSION_COOKIE = "a2a_console"
GOOD_SIGN_IN = "Basic " + base64.b64encode(b"user:pass").decode()

STREAM_SECONDS = 600   # one /admin/calls/stream lasts at most this long
KEEPALIVE_SECONDS = 15


def now_iso():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class World:
    """The fake fleet: agents, skills, a ring of recent calls."""

    def __init__(self, hostile_name, auth):
        self.hostile = hostile_name
        self.auth = auth
        self.lock = threading.Lock()
        self.sessions = set()
        self.generation = 4
        self.started = time.time()
        self.rand = random.Random(68)
        self.calls = []            # newest first
        self.capacity = 500
        self.listeners = []        # per-stream lists (with a Condition)
        self.cond = threading.Condition(self.lock)
        for _ in range(40):
            self.calls.insert(0, self.make_call(back=self.rand.uniform(5, 600)))
        self.calls.sort(key=lambda c: c["at"], reverse=True)

    # ---- static shapes ------------------------------------------------------

    def agents(self):
        r = self.rand
        evil = self.hostile
        return [
            {
                "name": "weather",
                "urls": ["http://127.0.0.1:9001/", "http://127.0.0.1:9011/"],
                "card": {"state": "fresh", "age_seconds": r.randint(3, 40), "name": "Weather Agent",
                         "description": "Forecasts, alerts and historical weather for any city.",
                         "streaming": True, "push_notifications": False, "last_error": None},
                "versions": {"JSONRPC": ["1.0", "0.3"], "HTTP+JSON": ["1.0"]},
                "versions_from": "card",
                "card_signature": {"mode": "verify", "state": "valid", "kid": "k1"},
                "replicas": [
                    {"url": "http://127.0.0.1:9001/", "state": "closed", "outstanding": r.randint(0, 3)},
                    {"url": "http://127.0.0.1:9011/", "state": "half_open", "outstanding": 0},
                ],
                "in_flight": r.randint(0, 12),
                "max_in_flight": 256,
                "last_minute": self.minute(30, 1),
            },
            {
                "name": "travel",
                "urls": ["http://127.0.0.1:9002/"],
                "card": {"state": "fresh", "age_seconds": r.randint(3, 40), "name": "Travel Desk",
                         "description": "Books flights and hotels; tells the status of a booking.",
                         "streaming": True, "push_notifications": True, "last_error": None},
                "versions": {"JSONRPC": ["0.3"], "HTTP+JSON": ["0.3"], "GRPC": ["0.3"]},
                "versions_from": "card",
                "card_signature": {"mode": "verify", "state": "unchecked"},
                "replicas": [{"url": "http://127.0.0.1:9002/", "state": "open", "outstanding": 0}],
                "in_flight": 0,
                "max_in_flight": 64,
                "last_minute": self.minute(8, 5),
            },
            {
                "name": "legacy",
                "urls": ["http://127.0.0.1:9003/"],
                "card": {"state": "missing", "age_seconds": None, "name": None, "description": None,
                         "streaming": None, "push_notifications": None,
                         "last_error": "GET http://127.0.0.1:9003/.well-known/agent.json: connection refused"},
                "versions": {"JSONRPC": ["0.1"]},
                "versions_from": "config",
                "replicas": [{"url": "http://127.0.0.1:9003/", "state": "closed", "outstanding": 0}],
                "in_flight": 0,
                "max_in_flight": 16,
                "last_minute": self.minute(2, 0),
            },
            {
                "name": evil,
                "urls": ["http://127.0.0.1:9666/"],
                "card": {"state": "fresh", "age_seconds": r.randint(100, 300),
                         "name": f"Evil {H_SCRIPT}",
                         "description": f"Totally harmless {H_IMG} agent {H_SVG}",
                         "streaming": True, "push_notifications": False,
                         "last_error": f"refresh failed: upstream said {H_SCRIPT} {H_IMG} {H_SVG}"},
                "versions": {"JSONRPC": ["1.0"]},
                "versions_from": "card",
                "card_signature": {"mode": "require", "state": "invalid", "kid": H_SVG},
                "replicas": [{"url": "http://127.0.0.1:9666/", "state": "closed", "outstanding": 1}],
                "in_flight": 1,
                "max_in_flight": 8,
                "last_minute": self.minute(3, 2),
            },
        ]

    def minute(self, calls, errors):
        calls = max(0, calls + self.rand.randint(-3, 3))
        errors = min(calls, max(0, errors + self.rand.randint(-1, 1)))
        return {"calls": calls, "errors": errors, "per_second": round(calls / 60, 3),
                "error_rate": round(errors / calls, 3) if calls else 0.0, "seconds": 60}

    def skills(self):
        evil = self.hostile
        return [
            {"id": "weather/forecast", "name": "Forecast", "description": "Weather forecast for a city, up to ten days ahead.",
             "tags": ["weather", "forecast", "rain"], "examples": ["will it rain tomorrow in Paris", "forecast for Lyon"],
             "owner": "weather"},
            {"id": "weather/alerts", "name": "Severe weather alerts", "description": "Storm, flood and heat warnings in force.",
             "tags": ["weather", "alerts", "storm"], "examples": ["any storm warnings near Nice"], "owner": "weather"},
            {"id": "travel/book", "name": "Book a trip", "description": "Books flights and hotels.",
             "tags": ["travel", "flight", "hotel", "book"], "examples": ["book a flight to Rome on Friday"], "owner": "travel"},
            {"id": "travel/status", "name": "Booking status", "description": "Where a booking stands.",
             "tags": ["travel", "booking"], "examples": ["status of booking ABC123"], "owner": "travel"},
            {"id": "legacy/echo", "name": "Echo", "description": "Echoes the message (A2A 0.1 agent).",
             "tags": ["echo", "test"], "examples": ["echo hello"], "owner": "legacy"},
            {"id": f"{evil}/pwn", "name": f"Pwn {H_SCRIPT}", "description": f"Steals {H_IMG} nothing {H_SVG}",
             "tags": [H_SCRIPT, H_IMG, H_SVG], "examples": [f"please {H_SVG}"], "owner": evil},
        ]

    def routing(self):
        return {"default_upstream": "weather", "skill_header": "a2a-skill",
                "metadata_keys": ["skillId"], "match": {"enabled": True, "min_score": 0.2, "margin": 0.25}}

    def match(self, text):
        words = set(re.findall(r"[a-z0-9]+", text.lower()))
        scores = []
        for s in self.skills():
            bag = " ".join([s["id"], s["name"], s["description"], " ".join(s["tags"]), " ".join(s["examples"])])
            vocab = set(re.findall(r"[a-z0-9]+", bag.lower()))
            hit = len(words & vocab)
            score = round(hit / (len(words) + 1) if words else 0.0, 3)
            scores.append({"skill": s["id"], "owner": s["owner"], "score": score})
        scores.sort(key=lambda x: x["score"], reverse=True)
        picked = None
        if scores and scores[0]["score"] >= 0.2:
            others = [x["score"] for x in scores if x["owner"] != scores[0]["owner"]]
            picked = dict(scores[0], runner_up=max(others) if others else 0.0)
        return {"text": text, "picked": picked, "scores": scores}

    def limits(self):
        r = self.rand
        return {
            "rate_limits": {
                "configured": [
                    {"limit": "global", "scope": None, "amount": 500, "per": "second", "burst": 1000},
                    {"limit": "caller", "scope": None, "amount": 10, "per": "second", "burst": 20},
                    {"limit": "upstream", "scope": "travel", "amount": 600, "per": "minute", "burst": 50},
                    {"limit": "skill", "scope": "weather/forecast", "amount": 5, "per": "second", "burst": 10},
                ],
                "store": {"address": "redis://127.0.0.1:6379/0", "state": "up", "on_store_error": "local"},
                "max_tracked_callers": 100000,
                "rejections": {"caller": float(3 + int(time.time() - self.started) // 7), "upstream": 1.0},
            },
            "concurrency": {"streams_open": r.randint(0, 9), "max_streams": 10000, "max_streams_per_caller": 100},
            "in_flight": [
                {"upstream": "weather", "in_flight": r.randint(0, 200), "max": 256, "queue": 64},
                {"upstream": "travel", "in_flight": 0, "max": 64, "queue": 16},
                {"upstream": "legacy", "in_flight": 0, "max": 16, "queue": 0},
                {"upstream": self.hostile, "in_flight": 7, "max": 8, "queue": 0},
            ],
        }

    def config(self):
        return {
            "public_url": "http://127.0.0.1:8080",
            "versions": ["1.0", "0.3", "0.1"],
            "bindings": ["JSONRPC", "HTTP+JSON", "GRPC"],
            "auth": [
                {"scheme": "key", "type": "apiKey", "in": "header", "name": "X-API-Key"},
                {"scheme": "ops", "type": "basic"},
                {"scheme": "jwt", "type": "bearer"},
                {"scheme": "mtls", "type": "mutualTLS"},
            ],
            "console_auth": self.auth,
        }

    # ---- calls ----------------------------------------------------------------

    def make_call(self, back=0.0):
        r = self.rand
        upstream = r.choice(["weather", "weather", "weather", "travel", "legacy", self.hostile])
        binding, version, method = r.choice([
            ("jsonrpc", "1.0", "SendMessage"), ("jsonrpc", "1.0", "SendStreamingMessage"),
            ("jsonrpc", "0.3", "message/send"), ("jsonrpc", "0.3", "message/stream"),
            ("http+json", "1.0", "POST /message:send"), ("jsonrpc", "0.1", "tasks/send"),
            ("grpc", "1.0", "SendMessage"), ("jsonrpc", "0.3", "tasks/get"),
        ])
        status, error, code, outcome = r.choice([
            (200, "none", None, "complete")] * 8 + [
            (200, "none", None, "stream_complete"),
            (429, "rate_limited", None, "rejected"),
            (401, "unauthenticated", None, "rejected"),
            (502, "upstream_unreachable", None, "failed"),
            (504, "upstream_timeout", None, "failed"),
            (200, "jsonrpc_error", -32001, "complete"),
        ])
        skills = {"weather": ["weather/forecast", "weather/alerts"], "travel": ["travel/book", "travel/status"],
                  "legacy": ["legacy/echo"], self.hostile: [f"{self.hostile}/pwn"]}[upstream]
        caller = r.choice(["team-a", "team-b", "ci-bot", None])
        if upstream == self.hostile:
            caller = f"mallory {H_IMG}"
        at = datetime.fromtimestamp(time.time() - back, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return {
            "at": at, "request_id": str(uuid.UUID(int=r.getrandbits(128))), "method": method,
            "binding": binding, "version": version,
            "agent_version": r.choice([version, version, "1.0"]), "upstream": upstream,
            "skill": r.choice(skills + [None]), "status": status, "error": error, "code": code,
            "duration_ms": round(r.uniform(1.5, 900.0), 1), "outcome": outcome,
            "trace_id": r.choice([None, secrets.token_hex(16)]), "caller": caller,
            "client": r.choice(["127.0.0.1", "10.0.0.7", "10.0.0.12"]),
        }

    def add_call(self, call):
        with self.cond:
            self.calls.insert(0, call)
            del self.calls[self.capacity:]
            self.cond.notify_all()

    def filtered_calls(self, q):
        upstream = q.get("upstream", [""])[0]
        status = q.get("status", [""])[0]
        caller = q.get("caller", [""])[0]
        try:
            limit = max(1, min(int(q.get("limit", ["100"])[0] or 100), self.capacity))
        except ValueError:
            limit = 100
        out = []
        with self.lock:
            calls = list(self.calls)
        for c in calls:
            if upstream and c["upstream"] != upstream:
                continue
            if status:
                if re.fullmatch(r"[1-5]xx", status):
                    if c["status"] // 100 != int(status[0]):
                        continue
                elif str(c["status"]) != status:
                    continue
            if caller and caller not in (c["caller"] or ""):
                continue
            out.append(c)
            if len(out) >= limit:
                break
        return out


def try_events(version, binding, text, task_id, context_id):
    """Three stream events (working, artifact, completed) in the shape of the version."""
    answer = f"You said: {text}"
    if binding == "jsonrpc" and version == "0.1":
        return [
            {"id": task_id, "status": {"state": "working", "timestamp": now_iso()}, "final": False},
            {"id": task_id, "artifact": {"parts": [{"type": "text", "text": answer}], "index": 0}},
            {"id": task_id, "status": {"state": "completed", "timestamp": now_iso()}, "final": True},
        ]
    if version == "0.3" and binding == "jsonrpc":
        return [
            {"kind": "status-update", "taskId": task_id, "contextId": context_id,
             "status": {"state": "working", "timestamp": now_iso()}, "final": False},
            {"kind": "artifact-update", "taskId": task_id, "contextId": context_id,
             "artifact": {"artifactId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": answer}]}},
            {"kind": "status-update", "taskId": task_id, "contextId": context_id,
             "status": {"state": "completed", "timestamp": now_iso()}, "final": True},
        ]
    if version == "0.3":  # HTTP+JSON 0.3 (v1 REST shapes)
        return [
            {"statusUpdate": {"taskId": task_id, "contextId": context_id,
                              "status": {"state": "TASK_STATE_WORKING"}, "final": False}},
            {"artifactUpdate": {"taskId": task_id, "contextId": context_id,
                                "artifact": {"artifactId": str(uuid.uuid4()), "parts": [{"text": answer}]}}},
            {"statusUpdate": {"taskId": task_id, "contextId": context_id,
                              "status": {"state": "TASK_STATE_COMPLETED"}, "final": True}},
        ]
    return [
        {"statusUpdate": {"taskId": task_id, "contextId": context_id,
                          "status": {"state": "TASK_STATE_WORKING"}}},
        {"artifactUpdate": {"taskId": task_id, "contextId": context_id,
                            "artifact": {"artifactId": str(uuid.uuid4()), "parts": [{"text": answer}]}}},
        {"statusUpdate": {"taskId": task_id, "contextId": context_id,
                          "status": {"state": "TASK_STATE_COMPLETED"}}},
    ]


# method -> (version, streaming)
RPC_METHODS = {
    "SendMessage": ("1.0", False), "SendStreamingMessage": ("1.0", True),
    "message/send": ("0.3", False), "message/stream": ("0.3", True),
    "tasks/send": ("0.1", False), "tasks/sendSubscribe": ("0.1", True),
}
REST_ROUTES = {
    "/message:send": ("1.0", False), "/message:stream": ("1.0", True),
    "/v1/message:send": ("0.3", False), "/v1/message:stream": ("0.3", True),
}
TRY_HEADERS = {"content-type", "accept", "a2a-version", "a2a-skill", "a2a-extensions", "authorization", "x-api-key"}


class Handler(BaseHTTPRequestHandler):
    server_version = "mock-admin/1"
    protocol_version = "HTTP/1.0"
    world: World = None  # set in main

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("%s - %s\n" % (self.address_string(), fmt % args))

    # ---- plumbing ------------------------------------------------------------

    def send_common(self, status, ctype, length=None, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        if length is not None:
            self.send_header("Content-Length", str(length))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def json(self, status, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_common(status, "application/json", len(body), extra)
        self.wfile.write(body)

    def body_json(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 1 << 20:
            raise ValueError("body too large")
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw or b"null")

    def signed_in(self):
        if not self.world.auth:
            return True
        for part in (self.headers.get("Cookie") or "").split(";"):
            k, _, v = part.strip().partition("=")
            if k == SESSION_COOKIE:
                with self.world.lock:
                    return v in self.world.sessions
        return False

    def need_session(self):
        if self.signed_in():
            return False
        self.json(401, {"error": "sign in to the console (POST /admin/session)", "sign_in": True})
        return True

    def asset(self, name, ctype):
        try:
            with open(os.path.join(ASSETS, name), "rb") as f:
                body = f.read()
        except OSError:
            self.json(404, {"error": f"no {name} in {ASSETS}"})
            return
        self.send_common(200, ctype, len(body))
        self.wfile.write(body)

    # ---- routes ----------------------------------------------------------------

    def do_GET(self):
        u = urlsplit(self.path)
        q = parse_qs(u.query, keep_blank_values=True)
        p = u.path
        w = self.world
        if p in ("/console", "/console/", "/console/index.html"):
            return self.asset("index.html", "text/html; charset=utf-8")
        if p == "/console/console.css":
            return self.asset("console.css", "text/css; charset=utf-8")
        if p == "/console/console.js":
            return self.asset("console.js", "text/javascript; charset=utf-8")
        if p == "/":
            self.send_common(302, "text/plain", 0, {"Location": "/console"})
            return
        if not p.startswith("/admin/"):
            return self.json(404, {"error": "not found"})
        if self.need_session():
            return
        if p == "/admin/fleet":
            with w.lock:
                agents = w.agents()
            return self.json(200, {"status": "ready", "generation": w.generation, "agents": agents})
        if p == "/admin/skills":
            return self.json(200, {"skills": w.skills(), "routing": w.routing()})
        if p == "/admin/skills/match":
            return self.json(200, w.match(q.get("text", [""])[0]))
        if p == "/admin/calls":
            return self.json(200, {"calls": w.filtered_calls(q), "capacity": w.capacity, "recording": True})
        if p == "/admin/calls/stream":
            return self.calls_stream()
        if p == "/admin/limits":
            with w.lock:
                limits = w.limits()
            return self.json(200, limits)
        if p == "/admin/config":
            return self.json(200, w.config())
        return self.json(404, {"error": f"no {p}"})

    def do_POST(self):
        p = urlsplit(self.path).path
        if not p.startswith("/admin/"):
            return self.json(404, {"error": "not found"})
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return self.json(415, {"error": "application/json only"})
        try:
            body = self.body_json()
        except (ValueError, json.JSONDecodeError) as e:
            return self.json(400, {"error": f"bad JSON: {e}"})
        if p == "/admin/session":
            return self.sign_in(body)
        if self.need_session():
            return
        if p == "/admin/try":
            return self.try_call(body)
        return self.json(404, {"error": f"no {p}"})

    def do_DELETE(self):
        p = urlsplit(self.path).path
        if p == "/admin/session":
            for part in (self.headers.get("Cookie") or "").split(";"):
                k, _, v = part.strip().partition("=")
                if k == SESSION_COOKIE:
                    with self.world.lock:
                        self.world.sessions.discard(v)
            return self.json(200, {"signed_out": True},
                             {"Set-Cookie": f"{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"})
        return self.json(404, {"error": "not found"})

    def sign_in(self, body):
        headers = body.get("headers") if isinstance(body, dict) else None
        if not isinstance(headers, dict):
            return self.json(400, {"error": 'expected {"headers": {...}}'})
        got = {str(k).lower(): v for k, v in headers.items()}
        if got.get("authorization") != GOOD_SIGN_IN:
            return self.json(401, {"error": "credentials refused", "sign_in": True})
        sid = secrets.token_urlsafe(24)
        with self.world.lock:
            self.world.sessions.add(sid)
        return self.json(200, {"signed_in": True, "expires_in": 8 * 3600},
                         {"Set-Cookie": f"{SESSION_COOKIE}={sid}; HttpOnly; SameSite=Strict; Path=/"})

    def calls_stream(self):
        w = self.world
        self.send_common(200, "text/event-stream")
        deadline = time.time() + STREAM_SECONDS
        next_call = time.time() + 1.0
        last_write = time.time()
        try:
            self.wfile.write(b": hello\n\n")
            self.wfile.flush()
            while time.time() < deadline:
                time.sleep(0.1)
                now = time.time()
                if now >= next_call:
                    next_call = now + 1.0
                    call = w.make_call()
                    w.add_call(call)
                    self.wfile.write(b"event: call\ndata: " + json.dumps(call).encode() + b"\n\n")
                    self.wfile.flush()
                    last_write = now
                elif now - last_write >= KEEPALIVE_SECONDS:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    last_write = now
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def try_call(self, body):
        if not isinstance(body, dict):
            return self.json(400, {"error": "expected an object"})
        if body.get("binding") == "grpc":
            return self.try_grpc(body)
        method = body.get("method")
        path = body.get("path")
        headers = body.get("headers") or {}
        raw = body.get("body")
        if method != "POST" or not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
            return self.json(400, {"error": "method must be POST and path the gateway's own"})
        if not isinstance(headers, dict) or not isinstance(raw, str):
            return self.json(400, {"error": "headers must be an object and body a string"})
        headers = {str(k).lower(): str(v) for k, v in headers.items() if str(k).lower() in TRY_HEADERS}
        self.server.last_try = {"path": path, "headers": headers}
        try:
            req = json.loads(raw)
        except json.JSONDecodeError:
            return self.json(400, {"error": "body is not JSON"})

        scoped = re.sub(r"^/agents/[^/]+", "", path.split("?")[0]) or "/"
        if scoped in REST_ROUTES:
            binding = "http+json"
            version, streaming = REST_ROUTES[scoped]
            msg = (req or {}).get("message") or {}
            parts = msg.get("parts") or msg.get("content") or []
            rpc_id = None
        elif scoped == "/":
            binding = "jsonrpc"
            if not isinstance(req, dict) or req.get("jsonrpc") != "2.0" or req.get("method") not in RPC_METHODS:
                return self.json(200, {"jsonrpc": "2.0", "id": (req or {}).get("id") if isinstance(req, dict) else None,
                                       "error": {"code": -32601, "message": "method not found"}})
            version, streaming = RPC_METHODS[req["method"]]
            if version == "1.0" and headers.get("a2a-version") != "1.0":
                return self.json(200, {"jsonrpc": "2.0", "id": req.get("id"),
                                       "error": {"code": -32009, "message": "1.0 method without a2a-version: 1.0"}})
            msg = (req.get("params") or {}).get("message") or {}
            parts = msg.get("parts") or []
            rpc_id = req.get("id")
        else:
            return self.json(404, {"error": f"no route {path}"})
        text = ""
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                text += part["text"]
        creds = sorted(k for k in headers if k in ("authorization", "x-api-key"))
        if creds:
            text += f" (credentials: {', '.join(creds)})"
        task_id = str(uuid.uuid4())
        context_id = str(uuid.uuid4())
        events = try_events(version, binding, text, task_id, context_id)
        wrap = (lambda e: {"jsonrpc": "2.0", "id": rpc_id, "result": e}) if binding == "jsonrpc" else (lambda e: e)
        call = self.world.make_call()
        call.update({"method": req.get("method") if binding == "jsonrpc" else f"POST {scoped}",
                     "binding": binding, "version": version, "status": 200, "error": "none",
                     "outcome": "stream_complete" if streaming else "complete",
                     "skill": headers.get("a2a-skill"), "caller": "console try"})
        if not streaming:
            final = events[-1]
            task = {"id": task_id, "contextId": context_id, "status": final.get("status") or
                    (final.get("statusUpdate") or {}).get("status"),
                    "artifacts": [(events[1].get("artifact") or (events[1].get("artifactUpdate") or {}).get("artifact"))]}
            if version == "1.0":
                task = {"task": task}
            elif version == "0.3" and binding == "jsonrpc":
                task["kind"] = "task"
            self.world.add_call(call)
            return self.json(200, wrap(task))
        self.send_common(200, "text/event-stream")
        try:
            for i, e in enumerate(events):
                time.sleep(0.4 if i else 0.15)
                self.wfile.write(b"data: " + json.dumps(wrap(e)).encode() + b"\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            return
        self.world.add_call(call)

    def try_grpc(self, body):
        """Try it over gRPC: the params in, each answer message as an event, then the gRPC status."""
        version = body.get("version", "1.0")
        if version not in ("1.0", "0.3"):
            return self.json(400, {"error": f"gRPC version {version}: the services are 1.0 and 0.3"})
        params = body.get("params")
        msg = params.get("message") if isinstance(params, dict) else None
        if not isinstance(msg, dict):
            return self.json(400, {"error": "the params are not the service's request: no message"})
        parts = msg.get("parts") if version == "1.0" else msg.get("content")
        if not isinstance(parts, list):
            return self.json(400, {"error": f"the params are not the {version} request message"})
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
        events = try_events(version, "grpc", text, task_id, context_id)
        if not body.get("stream"):
            events = [{"task": {"id": task_id, "contextId": context_id,
                                "status": {"state": "TASK_STATE_COMPLETED"},
                                "artifacts": [events[1]["artifactUpdate"]["artifact"]]}}]
        self.send_common(200, "text/event-stream")
        try:
            for i, e in enumerate(events):
                time.sleep(0.4 if i else 0.15)
                self.wfile.write(b"data: " + json.dumps(e).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b'event: status\ndata: {"grpc-status": "0", "grpc-message": ""}\n\n')
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            return
        call = self.world.make_call()
        call.update({"method": "SendStreamingMessage" if body.get("stream") else "SendMessage", "binding": "grpc",
                     "version": version, "status": 200, "error": "none", "caller": "console try",
                     "outcome": "stream_complete" if body.get("stream") else "complete"})
        self.world.add_call(call)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--auth", action="store_true", help="/admin/* needs a session (user:pass)")
    ap.add_argument("--hostile", default="evil", help="name of the hostile agent")
    ap.add_argument("--max-seconds", type=float, default=1800, help="stop by itself after this long")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    Handler.world = World(args.hostile, args.auth)
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.verbose = args.verbose
    srv.last_try = None
    port = srv.server_address[1]
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(str(port))
    print(f"mock admin listening on http://127.0.0.1:{port}/console (auth={'on' if args.auth else 'off'})", flush=True)
    timer = threading.Timer(args.max_seconds, srv.shutdown)
    timer.daemon = True
    timer.start()
    try:
        srv.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
