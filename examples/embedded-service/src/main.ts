/**
 * An embedding host: Intake's use cases and its webhook dispatcher in this process, on the
 * memory layers, then on PGlite, then on PostgreSQL when DATABASE_URL is set (see README.md).
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"
import { deliveryEngine, dispatcherLayer } from "@intake/delivery"
import {
  IntakeBots,
  makeUseCasesLayer,
  Provisioning,
  StandardWebhooks,
  Submissions,
  WebhookSettings,
  Webhooks
} from "@intake/domain"
import { InProcessLive, MemoryPortsLive } from "@intake/memory"
import { NodePlatformLive } from "@intake/node"
import { layerPglite, PostgresPortsLive, pgPortsOn } from "@intake/postgres"
import { Deferred, Effect, Layer, Redacted } from "effect"

// The receiver is on 127.0.0.1: webhooks to private addresses are refused unless allowed.
const allowPrivateNetworks = true

/** The use cases and a dispatcher over a store's ports; the host's platform is NodePlatformLive. */
const intakeOn = <A, E>(ports: Layer.Layer<A, E, Layer.Layer.Success<typeof NodePlatformLive>>) =>
  dispatcherLayer({ concurrency: 8, pollIntervalMs: 1_000 }).pipe(
    Layer.provideMerge(Layer.mergeAll(makeUseCasesLayer(), deliveryEngine({ allowPrivateNetworks }))),
    Layer.provideMerge(Layer.merge(ports, WebhookSettings.layer({ allowPrivateNetworks }))),
    Layer.provideMerge(NodePlatformLive)
  )

interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** A webhook receiver on 127.0.0.1, closed with the scope; completes `received` with the first request. */
const loopbackReceiver = (received: Deferred.Deferred<Received>) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const server = createServer((request, response) => {
        let body = ""
        request.setEncoding("utf8")
        request.on("data", (chunk: string) => (body += chunk))
        request.on("end", () => {
          response.writeHead(204).end()
          Deferred.unsafeDone(received, Effect.succeed({ headers: request.headers, body }))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, close: () => server.close() }))
      })
    }),
    ({ close }) => Effect.sync(close)
  )

/** Whether the delivery carries a Standard Webhooks signature made with the endpoint's secret. */
const signedWith = (secret: string, { headers, body }: Received): boolean => {
  const expected = StandardWebhooks.sign(
    (key, message) => createHmac("sha256", key).update(message).digest(),
    {
      secret,
      messageId: String(headers["webhook-id"]),
      timestampSeconds: Number(headers["webhook-timestamp"]),
      body
    }
  )
  return String(headers["webhook-signature"])
    .split(" ")
    .some(
      (signature) =>
        signature.length === expected.length && timingSafeEqual(Buffer.from(signature), Buffer.from(expected))
    )
}

const scenario = (store: string) =>
  Effect.gen(function* () {
    const received = yield* Deferred.make<Received>()
    const receiver = yield* loopbackReceiver(received)
    const workspace = yield* (yield* Provisioning).createWorkspace({ name: "Embedded", plan: "pro" })
    const bot = yield* (yield* IntakeBots).create(workspace.id, {
      name: "Contact form",
      schema: [{ name: "email", label: "Email", type: "email", required: true }]
    })
    const endpoint = yield* (yield* Webhooks).create(workspace.id, {
      url: receiver.url,
      events: ["submission.completed"]
    })
    const submissions = yield* Submissions
    const created = yield* submissions.create(workspace.id, bot.id, { data: { email: "ada@example.com" } })
    const readBack = yield* submissions.get(workspace.id, bot.id, created.id)
    const delivery = yield* Deferred.await(received).pipe(Effect.timeout("20 seconds"))
    const event = JSON.parse(delivery.body) as {
      readonly type: string
      readonly data: { readonly submission: { readonly id: string } }
    }
    if (
      readBack.data.email !== "ada@example.com" ||
      event.data.submission.id !== created.id ||
      !signedWith(endpoint.secret, delivery)
    )
      return yield* Effect.dieMessage(
        `${store}: the submission read back or its delivery is not the one created`
      )
    yield* Effect.log(
      `${store}: submission ${created.id} read back; ${event.type} delivered, signature verified`
    )
  }).pipe(Effect.scoped)

const databaseUrl = process.env.DATABASE_URL
const program = Effect.gen(function* () {
  yield* scenario("memory").pipe(Effect.provide(intakeOn(MemoryPortsLive)))
  yield* scenario("PGlite").pipe(
    Effect.provide(intakeOn(pgPortsOn(layerPglite({})).pipe(Layer.provideMerge(InProcessLive))))
  )
  if (databaseUrl !== undefined && databaseUrl !== "")
    yield* scenario("PostgreSQL").pipe(
      Effect.provide(
        intakeOn(
          PostgresPortsLive({ url: Redacted.make(databaseUrl) }).pipe(Layer.provideMerge(InProcessLive))
        )
      )
    )
})

Effect.runPromise(program).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
