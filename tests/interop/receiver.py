"""A webhook for the push tests (stdlib only): python3 receiver.py PORT

Listens on 127.0.0.1:PORT. Every POST (any path) is recorded as
{"path", "headers" (names lower-cased), "body" (the JSON, or the raw text
under "raw" if it is not JSON), "t" (seconds since start)} and answered
200 with {}. GET /received returns the records as a JSON list, oldest first;
GET /received?path=/hook/X only those POSTed to /hook/X. GET /now returns
{"t": seconds since start}, the clock of the records' "t". Keeps the last
1000 records. Logs nothing but errors.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MAX_RECORDS = 1000
MAX_BODY = 1 << 20
START = time.monotonic()
LOCK = threading.Lock()
RECORDS: list[dict] = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _answer(self, status: int, doc) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header('content-type', 'application/json')
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = min(int(self.headers.get('content-length') or 0), MAX_BODY)
        raw = self.rfile.read(length) if length > 0 else b''
        text = raw.decode('utf-8', 'replace')
        record = {
            'path': urlsplit(self.path).path,
            'headers': {k.lower(): v for k, v in self.headers.items()},
            't': round(time.monotonic() - START, 3),
        }
        try:
            record['body'] = json.loads(text)
        except ValueError:
            record['raw'] = text
        with LOCK:
            RECORDS.append(record)
            del RECORDS[:-MAX_RECORDS]
        self._answer(200, {})

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        if url.path == '/now':
            self._answer(200, {'t': round(time.monotonic() - START, 3)})
            return
        if url.path != '/received':
            self._answer(404, {'error': 'not found'})
            return
        want = parse_qs(url.query).get('path')
        with LOCK:
            out = [r for r in RECORDS if not want or r['path'] == want[0]]
        self._answer(200, out)

    def log_message(self, *_args) -> None:
        pass


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit('usage: receiver.py PORT')
    server = ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Handler)
    server.daemon_threads = True
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
