"""A receiver on Flask. request.get_data() is the raw body; request.json would parse it first.

Run: WEBHOOK_SECRET=whsec_... flask --app receiver_flask run --port 4000
"""
import os

from flask import Flask, request

from verify_webhook import verify_webhook

SECRET = os.environ["WEBHOOK_SECRET"]
app = Flask(__name__)


@app.post("/webhooks/intake")
def intake_webhook():
    event = verify_webhook(request.get_data(), request.headers, SECRET)
    if event is None:
        return "", 401
    print("verified", event["id"], event["type"], flush=True)
    return "", 204
