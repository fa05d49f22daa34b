"""An AOS guardian for a2a-guard in Python, standard library only (Python 3.8+).

Denies any A2A call that mentions a molotov, allows the rest, answers `ping`. Every request gets a
JSON-RPC answer, a broken one an error: never a crash. The shapes it reads and writes are the
toolkit's JSON Schemas (envelope.schema.json, answer.schema.json in @a2a-guard/toolkit).

    PORT=7070 GUARDIAN_TOKEN=secret python3 guardian.py
    GUARDIAN_URL=http://127.0.0.1:7070 GUARDIAN_TOKEN=secret UPSTREAM_URL=... a2a-guard
"""
import hmac
import json
import os
import re
import signal
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = os.environ.get("GUARDIAN_TOKEN")
MAX_BODY = 32 * 1024 * 1024
WEAPONS = re.compile(r"\b(molotov|explosives?)\b", re.IGNORECASE)


def decide(envelope):
    """The decision for one hook: envelope["params"]["payload"] is the A2A request or response."""
    text = json.dumps(envelope["params"].get("payload"))
    if WEAPONS.search(text):
        return {"decision": "deny", "message": "Not on my watch.", "reasonCode": ["WEAPONS"]}
    return {"decision": "allow", "message": "Fine.", "reasonCode": ["ALLOWED"]}


def answer(request):
    """The JSON-RPC answer to a parsed request (HTTP status, body)."""
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return 400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "expected a JSON-RPC request"}}
    rid = request.get("id")
    if request["method"] == "ping":
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {"status": "connected", "version": "1", "timestamp": now}}
    params = request.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("payload"), dict):
        return 200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "params.payload: expected an object"}}
    return 200, {"jsonrpc": "2.0", "id": rid, "result": decide(request)}


class Guardian(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a2a-guard pools its connections

    def send(self, status, body):
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.split("?")[0] == "/healthz":
            return self.send(200, {"status": "ok"})
        self.send(405, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "AOS requests are JSON-RPC over HTTP POST"}})

    def do_POST(self):
        if self.headers.get("content-length") is None and self.headers.get("transfer-encoding") is not None:
            self.close_connection = True  # a2a-guard always sends a content-length; chunked bodies are not read here
            return self.send(411, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "content-length required"}})
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            return self.send(413, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "body too large"}})
        body = self.rfile.read(length)
        if TOKEN is not None and not hmac.compare_digest(self.headers.get("authorization", ""), "Bearer " + TOKEN):
            return self.send(401, {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Unauthorized"}})
        try:
            request = json.loads(body)
        except ValueError:
            return self.send(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Invalid JSON payload"}})
        try:
            self.send(*answer(request))
        except Exception:  # a bug in decide() is an error answer (a2a-guard applies its FAIL_MODE), never a crash
            self.send(200, {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32603, "message": "Internal error"}})

    def log_message(self, format, *args):
        pass  # no request lines: a payload is the callers' data


def main():
    server = ThreadingHTTPServer((os.environ.get("HOST", "0.0.0.0"), int(os.environ.get("PORT", "7070"))), Guardian)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    host, port = server.server_address[:2]
    print(f"guardian listening on http://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}", flush=True)
    server.serve_forever()
    server.server_close()


if __name__ == "__main__":
    main()
