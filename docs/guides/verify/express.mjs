// A receiver on Express. express.raw() keeps the body as a Buffer for this route only;
// a JSON parser that ran first (app.use(express.json())) would leave nothing to verify.
import express from "express"
import { verifyWebhook } from "./verify-webhook.mjs"

const secret = process.env.WEBHOOK_SECRET
const app = express()

app.post("/webhooks/intake", express.raw({ type: "application/json" }), (request, response) => {
  const event = verifyWebhook(request.body, request.headers, secret)
  if (event === null) return response.sendStatus(401)
  console.log("verified", event.id, event.type)
  response.sendStatus(204)
})

// The rest of the application may parse JSON as usual, after the webhook route.
app.use(express.json())

app.listen(Number(process.env.PORT ?? 4000))
