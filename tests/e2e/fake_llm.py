#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for hone's end-to-end tests.

Usage: fake_llm.py SCRIPT.json LOG.jsonl PORT_FILE [--model NAME]

Listens on 127.0.0.1 (a free port, written to PORT_FILE) and answers each
POST .../chat/completions with the next action of SCRIPT (a JSON list):
  {"content": "...", "usage": [prompt, completion]}   a good reply (200)
  {"status": 429, "headers": {"Retry-After": "1"}, "body": "..."}
  {"hang": SECONDS}                                   answer nothing for a while
  {"truncate": true}                                  a 200 whose body is cut off
When the script is used up it answers 400 "script exhausted". A request for a
model other than --model gets 404, as real servers do. Every request is logged
to LOG as one JSON line: {"body": ..., "authorization": ..., "time": seconds since the epoch}.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script_path, log_path, port_file = sys.argv[1:4]
model = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else None
with open(script_path) as f:
    script = json.load(f)
lock = threading.Lock()
position = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, headers=None):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        global position
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"unparsable": raw.decode(errors="replace")}
        with lock:
            with open(log_path, "a") as log:
                log.write(json.dumps({"body": body, "authorization": self.headers.get("Authorization"),
                                      "time": time.time()}) + "\n")
            if not self.path.endswith("/chat/completions"):
                action = {"status": 404, "body": json.dumps({"error": {"message": "no route " + self.path}})}
            elif model is not None and body.get("model") != model:
                action = {"status": 404, "body": json.dumps(
                    {"error": {"message": f"The model `{body.get('model')}` does not exist", "code": "model_not_found"}})}
            elif position < len(script):
                action = script[position]
                position += 1
            else:
                action = {"status": 400, "body": json.dumps({"error": {"message": "script exhausted"}})}
        if "hang" in action:
            time.sleep(action["hang"])
            self.close_connection = True
            return
        if "content" in action:
            p, c = action.get("usage", [10, 5])
            reply = {"id": "fake", "object": "chat.completion", "model": body.get("model"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": action["content"]}}],
                     "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}
            self.send(200, json.dumps(reply))
            return
        if action.get("truncate"):
            data = b'{"id": "fake", "choices": [{"message": {"content": "Task * G'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])  # ... and close early: a cut body
            self.wfile.flush()
            self.close_connection = True
            return
        self.send(action.get("status", 500), action.get("body", json.dumps({"error": {"message": "scripted"}})),
                  action.get("headers"))


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
