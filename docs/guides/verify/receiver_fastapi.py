"""A receiver on FastAPI. await request.body() is the raw body: declare no model parameter,
which would parse (and re-serialize) it before you could verify it.

Run it on an ASGI server, uvicorn for instance:
WEBHOOK_SECRET=whsec_... uvicorn receiver_fastapi:app --port 4000
"""
import os

from fastapi import FastAPI, Request, Response

from verify_webhook import verify_webhook

SECRET = os.environ["WEBHOOK_SECRET"]
app = FastAPI()


@app.post("/webhooks/intake")
async def intake_webhook(request: Request):
    event = verify_webhook(await request.body(), request.headers, SECRET)
    if event is None:
        return Response(status_code=401)
    print("verified", event["id"], event["type"], flush=True)
    return Response(status_code=204)
