/**
 * Test and redeliver with an Idempotency-Key send outside any transaction: while a slow
 * receiver is being called, other writes go through, a duplicate is 409 in flight, and
 * once sent the key replays. Also runs on PostgreSQL and PGlite.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { eventually } from "./receiver.js"
import { dataOf, expectError, provision, realServer } from "./support.js"

/** A receiver on 127.0.0.1 that holds every request until `release` is called. */
const heldReceiver = Effect.acquireRelease(
  Effect.async<{ url: string; received: () => number; release: () => void; close: () => void }>((resume) => {
    let received = 0
    const waiting: Array<() => void> = []
    let released = false
    const server = createServer((request, response) => {
      request.resume()
      request.on("end", () => {
        received++
        const answer = () => response.writeHead(204).end()
        if (released) answer()
        else waiting.push(answer)
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
          received: () => received,
          release: () => {
            released = true
            for (const answer of waiting.splice(0)) answer()
          },
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        })
      )
    )
  }),
  (receiver) => Effect.sync(receiver.close)
)

layer(realServer({ allowPrivateNetworks: true }), { excludeTestServices: true })("idempotent sends", (it) => {
  it.scoped("a test with an Idempotency-Key holds no transaction while the receiver answers", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const other = yield* provision(baseUrl)
      const receiver = yield* heldReceiver
      const webhook = dataOf(
        yield* call(baseUrl, "POST", "/v1/webhooks", {
          key: tenant.key,
          body: { url: receiver.url, events: ["contact.created"] }
        })
      ).webhook
      const sendTest = () =>
        call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, {
          key: tenant.key,
          headers: { "idempotency-key": "test-once" }
        })
      const first = yield* Effect.fork(sendTest())
      yield* eventually(() => receiver.received() === 1)

      // The receiver is still being called: another write answers at once.
      const write = yield* call(baseUrl, "POST", `/v1/intake-bots/${other.botId}/submissions`, {
        key: other.key,
        body: { data: { name: "Ada", email: "ada@example.com" } }
      }).pipe(Effect.timeout("3 seconds"))
      dataOf(write, 201)
      // The same key meanwhile: in flight.
      expectError(yield* sendTest(), 409, "idempotency_conflict")

      receiver.release()
      const sent = yield* first.await.pipe(Effect.flatten)
      const delivery = dataOf(sent).delivery
      expect(delivery.status).toBe("succeeded")
      const replay = yield* sendTest()
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect(dataOf(replay).delivery.id).toBe(delivery.id)

      // Redeliver under a key: sent once, then replayed.
      const redeliver = () =>
        call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`, {
          key: tenant.key,
          headers: { "idempotency-key": "redeliver-once" }
        })
      const redelivered = dataOf(yield* redeliver()).delivery
      expect(dataOf(yield* redeliver()).delivery.id).toBe(redelivered.id)
      expect(receiver.received()).toBe(2)
    })
  )
})
