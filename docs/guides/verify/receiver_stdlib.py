"""A receiver on the standard library alone. Run: WEBHOOK_SECRET=whsec_... PORT=4000 python3 receiver_stdlib.py"""
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from verify_webhook import verify_webhook

SECRET = os.environ["WEBHOOK_SECRET"]


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        raw_body = self.rfile.read(int(self.headers.get("content-length", 0)))
        event = verify_webhook(raw_body, self.headers, SECRET)
        if event is None:
            self.send_response(401)
        else:
            # Delivery is at least once: the same event["id"] may come again; handle it once.
            print("verified", event["id"], event["type"], flush=True)
            self.send_response(204)
        self.end_headers()


ThreadingHTTPServer(("", int(os.environ.get("PORT", "4000"))), Receiver).serve_forever()
