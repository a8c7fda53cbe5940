"""Verifies an Intake delivery (Standard Webhooks) with the standard library only.

raw_body: the request body exactly as it arrived (bytes), before any JSON parsing.
headers: any mapping whose get() finds header names regardless of case (http.server,
Flask and Starlette headers all do). Returns the event (a dict) when the delivery is
genuine and recent, otherwise None.
"""
import base64
import hashlib
import hmac
import json
import time

TOLERANCE_SECONDS = 5 * 60


def verify_webhook(raw_body, headers, secret):
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not msg_id or not timestamp or not signatures:
        return None
    # A delivery older (or newer) than five minutes is refused: a captured one cannot be replayed later.
    if not (timestamp.isascii() and timestamp.isdigit()):
        return None
    if abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        return None
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + raw_body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    # During a secret rotation the header holds two signatures ("v1,<new> v1,<old>"): one is enough.
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return json.loads(raw_body)
    return None
