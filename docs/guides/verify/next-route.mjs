// A Next.js route handler (App Router), for instance app/api/webhooks/intake/route.js.
// request.arrayBuffer() reads the raw body; do not call request.json() before it.
import { verifyWebhook } from "./verify-webhook.mjs"

export async function POST(request) {
  const rawBody = Buffer.from(await request.arrayBuffer())
  const event = verifyWebhook(rawBody, Object.fromEntries(request.headers), process.env.WEBHOOK_SECRET)
  if (event === null) return new Response(null, { status: 401 })
  console.log("verified", event.id, event.type)
  return new Response(null, { status: 204 })
}
