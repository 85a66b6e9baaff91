#!/usr/bin/env python3
"""Soak driver for a2a-gateway (stdlib only; run by bench/soak.sh).

  drive.py load --gateway 127.0.0.1:PORT --pid PID --seconds N [--interval S]
               [--mix unary,stream,card,bad,method,abandon]
      Mixed traffic for N seconds from a few worker threads: unary calls,
      follow-ups, SSE streams and card fetches (the "good" requests, each
      checked), and bad input (malformed JSON, unknown methods, bad params,
      batches, wrong media type, oversized bodies, wrong HTTP methods) and
      abandoned connections (mid-head, mid-body, mid-stream, before the
      answer). Every S seconds it records the gateway's RSS, open file
      descriptors and the counts so far; at the end it prints the series and
      a verdict, and exits non-zero if RSS or fds did not end flat, a good
      request failed, or a bad one got an unexpected answer.

  drive.py serve --port PORT
      A small mock A2A upstream (message/send, tasks/get, message/stream with
      the x-bench-events header), used when bench/upstream.rs is absent.

Only loopback addresses are used; every loop is bounded by the deadline and
every socket by a timeout.
"""

import argparse
import http.client
import json
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SOCKET_TIMEOUT = 10.0
STREAM_EVENTS = 5


# ------------------------------------------------------------------ traffic

def message(version, text, msg_id):
    if version == "1.0":
        return {"messageId": msg_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"kind": "message", "messageId": msg_id, "role": "user",
            "parts": [{"kind": "text", "text": text}]}


def rpc(raw_id, method, params=None):
    body = {"jsonrpc": "2.0", "id": raw_id, "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.values = {}
        self.failures = []

    def add(self, key, n=1):
        with self.lock:
            self.values[key] = self.values.get(key, 0) + n

    def fail(self, key, why):
        with self.lock:
            self.values[key] = self.values.get(key, 0) + 1
            if len(self.failures) < 20:
                self.failures.append(f"{key}: {why}")

    def snapshot(self):
        with self.lock:
            return dict(self.values)


class Worker:
    """One client: a keep-alive connection plus fresh ones for the rude cases."""

    def __init__(self, host, port, counts, seed, mix=None):
        self.host, self.port = host, port
        actions = {
            "unary": self.good_unary,
            "stream": self.good_stream,
            "card": self.good_card,
            "bad": self.bad_input,
            "method": self.wrong_http_method,
            "abandon": self.abandon,
        }
        mix = mix or list(CLASSES)
        total = sum(CLASSES[n] for n in mix)
        self.mix, acc = [], 0.0
        for n in mix:
            acc += CLASSES[n] / total
            self.mix.append((acc, actions[n]))
        self.mix[-1] = (1.1, self.mix[-1][1])  # rounding never skips a step
        self.counts = counts
        self.rng = random.Random(seed)
        self.conn = None
        self.n = 0

    def connection(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=SOCKET_TIMEOUT)
        return self.conn

    def post(self, body, headers=None, path="/"):
        """One POST on the keep-alive connection; (status, headers, body)."""
        h = {"content-type": "application/json"}
        h.update(headers or {})
        for attempt in (0, 1):
            conn = self.connection()
            try:
                conn.request("POST", path, body=body, headers=h)
                r = conn.getresponse()
                data = r.read()
                if r.getheader("connection", "").lower() == "close":
                    self.reset()
                return r.status, r, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed while idle: retry
                # once on a fresh one (the request was not processed).
                self.reset()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def reset(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def next_id(self):
        self.n += 1
        return f"soak-{id(self) % 10000}-{self.n}"

    # ---- good requests -----------------------------------------------------

    def good_unary(self):
        rid = self.next_id()
        version = self.rng.choice(["0.3", "1.0"])
        body = rpc(rid, "message/send", {"message": message("0.3", f"hello {rid}", rid)})
        headers = {"A2A-Version": version} if version == "1.0" else {}
        status, _, data = self.post(body, headers)
        v = self.expect_result("unary", status, data, rid)
        if v is None:
            return
        task = v["result"].get("id")
        if not task:
            return self.counts.fail("good_failed", f"unary: no task id in {data[:200]!r}")
        self.counts.add("good_ok")
        # A follow-up naming the task (affinity).
        rid2 = self.next_id()
        status, _, data = self.post(rpc(rid2, "tasks/get", {"id": task}))
        if self.expect_result("follow-up", status, data, rid2) is not None:
            self.counts.add("good_ok")

    def expect_result(self, what, status, data, rid):
        try:
            v = json.loads(data)
        except ValueError:
            v = None
        if status != 200 or not isinstance(v, dict) or v.get("id") != rid or "result" not in v:
            self.counts.fail("good_failed", f"{what}: {status} {data[:200]!r}")
            return None
        return v

    def good_stream(self):
        rid = self.next_id()
        body = rpc(rid, "message/stream", {"message": message("0.3", "stream please", rid)})
        conn = http.client.HTTPConnection(self.host, self.port, timeout=SOCKET_TIMEOUT)
        try:
            conn.request("POST", "/", body=body, headers={
                "content-type": "application/json", "accept": "text/event-stream",
                "x-bench-events": str(STREAM_EVENTS)})
            r = conn.getresponse()
            raw = r.read()
            ctype = r.getheader("content-type", "")
            events = [e for e in raw.decode("utf-8", "replace").split("\n\n") if e.strip()]
            ok = r.status == 200 and ctype.startswith("text/event-stream") and len(events) == STREAM_EVENTS
            for e in events:
                data = "".join(l[5:].strip() for l in e.splitlines() if l.startswith("data:"))
                try:
                    v = json.loads(data)
                except ValueError:
                    ok = False
                    break
                ok = ok and v.get("id") == rid and "result" in v
            if ok:
                self.counts.add("good_ok")
                self.counts.add("streams_ok")
            else:
                self.counts.fail("good_failed", f"stream: {r.status} {ctype} {len(events)} events {raw[:200]!r}")
        finally:
            conn.close()

    def good_card(self):
        conn = self.connection()
        try:
            conn.request("GET", "/.well-known/agent-card.json")
            r = conn.getresponse()
            data = r.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.reset()
            return
        try:
            ok = r.status == 200 and isinstance(json.loads(data).get("skills"), list)
        except ValueError:
            ok = False
        if ok:
            self.counts.add("good_ok")
        else:
            self.counts.fail("good_failed", f"card: {r.status} {data[:200]!r}")

    # ---- bad input ---------------------------------------------------------

    BAD = [
        ("malformed_json", b'{"jsonrpc":"2.0","id":1,', {}, 200, -32700),
        ("unknown_method", rpc(7, "tasks/nope"), {}, 200, -32601),
        ("invalid_params", rpc(8, "message/send", {"message": {"role": "user"}}), {}, 200, -32602),
        ("batch", b'[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}]', {}, 200, -32600),
        ("not_an_object", b'"hello"', {}, 200, -32600),
        ("wrong_media_type", rpc(9, "tasks/get", {"id": "t"}), {"content-type": "text/plain"}, 415, -32600),
        ("oversized_body", b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"'
         + b"x" * 70000 + b'"}}', {}, 413, -32600),
        ("bad_id_type", rpc(True, "tasks/get", {"id": "t"}), {}, 200, -32600),
    ]

    def bad_input(self):
        name, body, headers, want_status, want_code = self.rng.choice(self.BAD)
        try:
            status, _, data = self.post(body, headers)
        except (OSError, http.client.HTTPException) as e:
            return self.counts.fail("bad_unexpected", f"{name}: {e!r}")
        try:
            code = json.loads(data)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = None
        if status == want_status and code == want_code:
            self.counts.add("bad_answered")
        else:
            self.counts.fail("bad_unexpected", f"{name}: {status} {data[:200]!r}")
        if status >= 400:
            # Error statuses may close the connection; start clean.
            self.reset()

    def wrong_http_method(self):
        conn = self.connection()
        try:
            conn.request("GET", "/")
            r = conn.getresponse()
            r.read()
            if r.status == 405:
                self.counts.add("bad_answered")
            else:
                self.counts.fail("bad_unexpected", f"GET /: {r.status}")
        except (OSError, http.client.HTTPException) as e:
            self.counts.fail("bad_unexpected", f"GET /: {e!r}")
        self.reset()

    def abandon(self):
        """A connection given up at a random point; no answer is read."""
        kind = self.rng.choice(["mid_head", "mid_body", "before_answer", "mid_stream", "idle", "declared_huge"])
        body = rpc(self.next_id(), "message/send", {"message": message("0.3", "bye", "m")})
        head = (f"POST / HTTP/1.1\r\nhost: {self.host}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n").encode()
        try:
            s = socket.create_connection((self.host, self.port), timeout=SOCKET_TIMEOUT)
        except OSError as e:
            return self.counts.fail("abandon_connect_failed", repr(e))
        try:
            if kind == "mid_head":
                s.sendall(head[: len(head) // 2])
            elif kind == "mid_body":
                s.sendall(head + body[: len(body) // 2])
            elif kind == "before_answer":
                s.sendall(head + body)
            elif kind == "declared_huge":
                s.sendall(head.replace(f"content-length: {len(body)}".encode(), b"content-length: 99999999"))
                s.recv(256)  # the 413 comes at once
            elif kind == "mid_stream":
                sbody = rpc(self.next_id(), "message/stream", {"message": message("0.3", "x", "m")})
                shead = (f"POST / HTTP/1.1\r\nhost: {self.host}\r\ncontent-type: application/json\r\n"
                         f"x-bench-events: {STREAM_EVENTS}\r\ncontent-length: {len(sbody)}\r\n\r\n").encode()
                s.sendall(shead + sbody)
                s.recv(64)
            # "idle": connect and leave.
        except OSError:
            pass
        finally:
            s.close()
        self.counts.add("abandoned")

    def step(self):
        roll = self.rng.random()
        try:
            for limit, action in self.mix:
                if roll < limit:
                    action()
                    break
        except (OSError, http.client.HTTPException) as e:
            self.reset()
            self.counts.fail("good_failed", f"transport: {e!r}")


# Traffic classes and their default shares of the steps (--mix picks some;
# their shares are then scaled to add up to 1).
CLASSES = {
    "unary": 0.40,
    "stream": 0.15,
    "card": 0.05,
    "bad": 0.25,
    "method": 0.03,
    "abandon": 0.12,
}


def parse_mix(text):
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CLASSES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"--mix takes a comma-separated list of {', '.join(CLASSES)}; got {text!r}")
    return names


# ---------------------------------------------------------------- sampling

def proc_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def proc_fds(pid):
    import os
    return len(os.listdir(f"/proc/{pid}/fd"))


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def verdict(samples, rss_tolerance, fd_slack):
    """Second-quarter vs last-quarter means (the first quarter is warm-up)."""
    n = len(samples)
    if n < 8:
        return False, [f"only {n} samples: run longer (or shorten --interval)"]
    q = n // 4
    second, last = samples[q:2 * q], samples[n - q:]
    rss2, rss4 = mean([s["rss_kib"] for s in second]), mean([s["rss_kib"] for s in last])
    fd2, fd4 = mean([s["fds"] for s in second]), mean([s["fds"] for s in last])
    lines = []
    ok = True
    rss_ok = rss4 <= rss2 * (1 + rss_tolerance)
    fd_ok = fd4 <= fd2 + fd_slack
    lines.append(f"RSS: second-quarter mean {rss2 / 1024:.1f} MiB, last-quarter mean {rss4 / 1024:.1f} MiB "
                 f"({(rss4 / rss2 - 1) * 100 if rss2 else 0:+.1f}%, allowed +{rss_tolerance * 100:.0f}%): "
                 f"{'flat' if rss_ok else 'GROWING'}")
    lines.append(f"fds: second-quarter mean {fd2:.1f}, last-quarter mean {fd4:.1f} (allowed +{fd_slack}): "
                 f"{'flat' if fd_ok else 'GROWING'}")
    ok = rss_ok and fd_ok
    return ok, lines


def load(args):
    host, port = args.gateway.rsplit(":", 1)
    port = int(port)
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("loopback only")
    counts = Counts()
    deadline = time.monotonic() + args.seconds
    stop = threading.Event()

    def run(seed):
        w = Worker(host, port, counts, seed, args.mix)
        while not stop.is_set() and time.monotonic() < deadline:
            w.step()
        w.reset()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(args.workers)]
    for t in threads:
        t.start()
    samples = []
    started = time.monotonic()
    print(f"{'t(s)':>6} {'RSS MiB':>8} {'fds':>5} {'good ok':>9} {'good fail':>9} "
          f"{'bad ok':>8} {'bad unexp':>9} {'abandoned':>9}", flush=True)
    try:
        next_at = started
        while True:
            now = time.monotonic()
            if now < next_at:
                time.sleep(min(next_at - now, max(deadline - now, 0) + 0.01))
                if time.monotonic() < next_at:
                    continue
            c = counts.snapshot()
            try:
                sample = {"t": round(time.monotonic() - started, 1), "rss_kib": proc_rss_kib(args.pid),
                          "fds": proc_fds(args.pid), **c}
            except FileNotFoundError:
                print("the gateway process is gone", flush=True)
                stop.set()
                return 1
            samples.append(sample)
            print(f"{sample['t']:>6} {sample['rss_kib'] / 1024:>8.1f} {sample['fds']:>5} "
                  f"{c.get('good_ok', 0):>9} {c.get('good_failed', 0):>9} {c.get('bad_answered', 0):>8} "
                  f"{c.get('bad_unexpected', 0):>9} {c.get('abandoned', 0):>9}", flush=True)
            if time.monotonic() >= deadline:
                break
            next_at += args.interval
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=SOCKET_TIMEOUT + 5)
    final = counts.snapshot()
    # One more sample once the workers have stopped and the gateway is idle.
    time.sleep(1)
    idle = {"rss_kib": proc_rss_kib(args.pid), "fds": proc_fds(args.pid)}
    ok, lines = verdict(samples, args.rss_tolerance, args.fd_slack)
    print()
    print("== soak verdict")
    print(f"duration {args.seconds}s, {args.workers} workers, {len(samples)} samples every {args.interval}s")
    print("requests: " + ", ".join(f"{k} {v}" for k, v in sorted(final.items())))
    print(f"idle after the load: RSS {idle['rss_kib'] / 1024:.1f} MiB, {idle['fds']} fds")
    for line in lines:
        print(line)
    if final.get("good_failed", 0):
        ok = False
        print(f"good requests that failed: {final['good_failed']}")
    if final.get("bad_unexpected", 0):
        ok = False
        print(f"bad input answered unexpectedly: {final['bad_unexpected']}")
    for f in counts.failures:
        print("  " + f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples": samples, "final": final, "idle": idle, "ok": ok}, f, indent=1)
    print("VERDICT: " + ("PASS (RSS and fds flat, every good request served)" if ok else "FAIL"))
    return 0 if ok else 1


# ------------------------------------------------------------ mock upstream

class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    tasks = 0
    lock = threading.Lock()

    def log_message(self, *a):
        pass

    def reply(self, status, ctype, body):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        card = {"name": "Soak Upstream", "description": "stdlib mock", "version": "1.0.0",
                "protocolVersion": "0.3.0", "url": "http://127.0.0.1/", "preferredTransport": "JSONRPC",
                "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"],
                "skills": [{"id": "echo", "name": "Echo", "description": "Echoes", "tags": ["echo"]}]}
        self.reply(200, "application/json", json.dumps(card).encode())

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(n)
        try:
            req = json.loads(raw)
        except ValueError:
            return self.reply(200, "application/json", b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}')
        rid, method = req.get("id"), req.get("method")
        with Upstream.lock:
            Upstream.tasks += 1
            task = f"task-{Upstream.tasks}"
        if method == "message/stream":
            events = int(self.headers.get("x-bench-events", "5"))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for i in range(events):
                state = "completed" if i == events - 1 else "working"
                ev = {"jsonrpc": "2.0", "id": rid, "result": {"kind": "status-update", "taskId": task,
                      "contextId": "ctx", "status": {"state": state}, "final": i == events - 1}}
                self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
                self.wfile.flush()
            self.close_connection = True
            return
        if method == "tasks/get":
            result = {"kind": "task", "id": req.get("params", {}).get("id"), "contextId": "ctx",
                      "status": {"state": "completed"}}
        else:
            result = {"kind": "task", "id": task, "contextId": "ctx", "status": {"state": "completed"}}
        self.reply(200, "application/json", json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode())


def serve(args):
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Upstream)
    server.daemon_threads = True
    print(f"soak upstream on http://127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    l = sub.add_parser("load")
    l.add_argument("--gateway", required=True)
    l.add_argument("--pid", type=int, required=True)
    l.add_argument("--seconds", type=int, default=600)
    l.add_argument("--interval", type=float, default=10)
    l.add_argument("--workers", type=int, default=6)
    l.add_argument("--rss-tolerance", type=float, default=0.10)
    l.add_argument("--fd-slack", type=int, default=5)
    l.add_argument("--json")
    l.add_argument("--mix", type=parse_mix, default=list(CLASSES),
                   help="traffic classes to send (default: all): " + ",".join(CLASSES))
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    sys.exit(load(args) if args.cmd == "load" else serve(args))


if __name__ == "__main__":
    main()
