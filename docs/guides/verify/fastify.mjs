// A receiver on Fastify. Inside this plugin, JSON bodies arrive as a Buffer (parseAs:
// "buffer"); the rest of the application keeps Fastify's JSON parser.
import Fastify from "fastify"
import { verifyWebhook } from "./verify-webhook.mjs"

const secret = process.env.WEBHOOK_SECRET
const app = Fastify()

app.register(async (webhooks) => {
  webhooks.addContentTypeParser("application/json", { parseAs: "buffer" }, (_request, body, done) =>
    done(null, body)
  )
  webhooks.post("/webhooks/intake", async (request, reply) => {
    const event = verifyWebhook(request.body, request.headers, secret)
    if (event === null) return reply.code(401).send()
    console.log("verified", event.id, event.type)
    return reply.code(204).send()
  })
})

await app.listen({ port: Number(process.env.PORT ?? 4000) })
