"""A hostile A2A agent for the console's browser test: its card's name,
description and skills carry markup that would run if the console rendered
it as HTML, and every call it answers is an error whose message does too.
Standard library only; loopback only; it stops itself after --max-seconds.

    python3 tests/console/hostile_agent.py --port PORT
"""
import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOSTILE = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    '"><svg onload=window.__xss=1>',
]


def card(port):
    url = f"http://127.0.0.1:{port}/"
    return {
        "name": "Evil " + HOSTILE[0],
        "description": "Hostile " + HOSTILE[1],
        "version": "1",
        "protocolVersion": "0.3.0",
        "url": url,
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "evil-skill",
            "name": HOSTILE[0],
            "description": HOSTILE[1] + " " + HOSTILE[2],
            "tags": HOSTILE,
        }],
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.endswith("/agent-card.json") or self.path.endswith("/agent.json"):
            return self.answer(200, card(self.server.server_address[1]))
        return self.answer(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        try:
            call = json.loads(self.rfile.read(min(length, 1 << 20)) or b"{}")
        except ValueError:
            call = {}
        error = {"code": -32603, "message": "failed: " + " ".join(HOSTILE)}
        return self.answer(200, {"jsonrpc": "2.0", "id": call.get("id"), "error": error})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--max-seconds", type=float, default=900)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Timer(args.max_seconds, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
