// A receiver on node:http alone. Run: WEBHOOK_SECRET=whsec_... PORT=4000 node node-http.mjs
import { createServer } from "node:http"
import { verifyWebhook } from "./verify-webhook.mjs"

const secret = process.env.WEBHOOK_SECRET

createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    const event = verifyWebhook(Buffer.concat(chunks), request.headers, secret)
    if (event === null) return response.writeHead(401).end()
    // Delivery is at least once: the same event.id may come again; handle it once.
    console.log("verified", event.id, event.type)
    response.writeHead(204).end()
  })
}).listen(Number(process.env.PORT ?? 4000))
