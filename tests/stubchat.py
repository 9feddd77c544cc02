"""A stub OpenAI-compatible chat endpoint on 127.0.0.1 for the tests (not part of the library).

Notebooks use it through a hidden cell that puts `../tests` on `sys.path`; tests import it directly.

| mode | behaviour |
|---|---|
| `ok` | 200 with a reply: `reply(items)` if given, else `"Summary of N items: <first item>"` cut to 12 words |
| `rate_limit` | 429 with `Retry-After` for the first `fail_times` requests (default 2), then like `ok` |
| `error` | always 500 |
| `hang` | reads the request and never answers (until the server stops) |
| `empty` | 200 with content `""` |
| `think` | 200 with content `<think>…</think>` only |
| `close_think` | 200 with reasoning that ends in `</think>` without an opening tag, then an answer |
| `long` | 200 with a reply of 200 words |
| `cut` | 200 with the start of a sentence and `finish_reason: "length"` (the model hit its token limit) |
| `fail_nth` | 500 on the request numbers in `fail_on` (1-based, default {3}), else like `ok` (case C-19) |

The server counts requests (`calls`) and keeps the parsed bodies and headers (`requests`, `headers`); `mode` may be
changed while it runs. `refused_url()` gives the URL of a loopback port where nothing listens.
"""
from __future__ import annotations
import json, socket, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["StubChatServer", "refused_url"]

class _StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass

    def _send(self, code, payload=None, headers=None):
        body = json.dumps(payload or {}).encode()
        self.send_response(code)
        for k, v in (headers or {}).items(): self.send_header(k, v)
        self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)

    def _reply(self, content, finish_reason="stop"):
        self._send(200, {"id": "stub", "object": "chat.completion", "model": "stub",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}]})

    def do_POST(self):
        srv: StubChatServer = self.server.stub
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with srv.lock:
            srv.calls += 1; n = srv.calls
            try: srv.requests.append(json.loads(body))
            except ValueError: srv.requests.append(None)
            srv.headers.append(dict(self.headers))
        mode = srv.mode
        if mode == "hang":
            srv.stopping.wait(); self.close_connection = True; return
        if mode == "error" or (mode == "fail_nth" and n in srv.fail_on): return self._send(500, {"error": {"message": "stub failure"}})
        if mode == "rate_limit" and n <= srv.fail_times: return self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": srv.retry_after})
        if mode == "empty": return self._reply("")
        if mode == "think": return self._reply("<think>The user wants a summary. Let me think about the facts...</think>\n")
        if mode == "close_think": return self._reply("Okay, the items are about programming, so I will say that.</think>\nThe user writes C++20.")
        if mode == "long": return self._reply(" ".join(["the user likes long answers"] * 40))
        if mode == "cut": return self._reply("The user writes C++20 and builds every project with", "length")
        items = srv.items(srv.requests[-1])
        try: text = srv.reply(items) if srv.reply else " ".join(f"Summary of {len(items)} items: {items[0] if items else ''}".split()[:12])
        except Exception as e: return self._send(500, {"error": {"message": f"stub reply failed: {e!r}"}})
        self._reply(text)

class StubChatServer:
    "A tiny OpenAI-compatible /v1/chat/completions server on 127.0.0.1 for tests. Use as a context manager; `url` is the base URL."
    MODES = ("ok", "rate_limit", "error", "hang", "empty", "think", "close_think", "long", "cut", "fail_nth")
    def __init__(self, mode:str="ok", # see the table above
                 reply=None, # callable(items: list[str]) -> str for 'ok' replies
                 fail_times:int=2, # 'rate_limit': how many 429s before success
                 retry_after:str="1", # 'rate_limit': the Retry-After header value
                 fail_on=(3,), # 'fail_nth': 1-based request numbers that get a 500
                ):
        if mode not in self.MODES: raise ValueError(f"unknown stub mode {mode!r}; use one of {self.MODES}")
        self.mode, self.reply, self.fail_times, self.retry_after, self.fail_on = mode, reply, fail_times, retry_after, set(fail_on)
        self.calls, self.requests, self.headers = 0, [], []
        self.lock, self.stopping = threading.Lock(), threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _StubHandler)
        self._httpd.daemon_threads = True
        self._httpd.stub = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="stub-chat", daemon=True)
        self._thread.start()

    @property
    def url(self)->str: return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @staticmethod
    def items(body)->list[str]:
        "The JSON list of items in a request built by `setree.chat.build_messages` ([] if absent)."
        try:
            user = next(m["content"] for m in body["messages"] if "ITEMS (JSON):\n" in str(m.get("content")))
            return json.loads(user.split("ITEMS (JSON):\n", 1)[1].split("\n\n", 1)[0])
        except (TypeError, KeyError, StopIteration, ValueError, AttributeError): return []

    def close(self):
        self.stopping.set(); self._httpd.shutdown(); self._httpd.server_close()
    def __enter__(self): return self
    def __exit__(self, *a): self.close()

def refused_url()->str:
    "Base URL of a loopback port where nothing listens (connections are refused)."
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
