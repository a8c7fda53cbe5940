/**
 * One dispatcher process of the drain bench (bench/delivery-drain.ts), driven over IPC:
 * `seed` fills the queue (workspaces, endpoints at the receiver, submissions, their events
 * and one pending attempt per endpoint), `go` starts the dispatcher, `read` answers the
 * statements this process sent, counted at the driver (bench/round-trips.ts). On PostgreSQL
 * when DATABASE_URL is set, else on an in-memory PGlite (then one process seeds and sends).
 */
import { randomUUID } from "node:crypto"
import { deliveryEngine, dispatcherLayer } from "@intake/delivery"
import {
  type DomainEvent,
  EventOutbox,
  type IntakeBot,
  IntakeBotRepository,
  queueDeliveries,
  type Submission,
  SubmissionRepository,
  UnitOfWork,
  UseCasesLive,
  WebhookSettings,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain"
import { InProcessLive } from "@intake/memory"
import { NodePlatformLive } from "@intake/node"
import { PostgresPortsLive } from "@intake/postgres"
import { PgliteTestLayer } from "@intake/postgres/testing"
import { Effect, Layer, Logger, LogLevel, ManagedRuntime, Redacted } from "effect"
import { resetRoundTripCounts, roundTripCounts } from "./round-trips.js"

export type DrainMessage =
  | {
      readonly type: "seed"
      readonly receiverUrl: string
      readonly workspaces: number
      readonly endpointsPerWorkspace: number
      readonly eventsPerWorkspace: number
    }
  | { readonly type: "go" }
  | { readonly type: "read" }

const CONCURRENCY = Number(process.env.WEBHOOK_DISPATCH_CONCURRENCY ?? 32)
const databaseUrl = process.env.DATABASE_URL
const id = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`

const ports =
  databaseUrl === undefined
    ? PgliteTestLayer
    : PostgresPortsLive({ url: Redacted.make(databaseUrl) }).pipe(
        Layer.provideMerge(Layer.merge(InProcessLive, NodePlatformLive))
      )
const services = Layer.merge(UseCasesLive, deliveryEngine({ allowPrivateNetworks: true })).pipe(
  Layer.provideMerge(Layer.merge(ports, WebhookSettings.layer({ allowPrivateNetworks: true })))
)
// As the server under LOG_LEVEL=warn: a line per attempt is not what is measured here.
const runtime = ManagedRuntime.make(Layer.merge(services, Logger.minimumLogLevel(LogLevel.Warning)))

const seed = (message: Extract<DrainMessage, { type: "seed" }>) =>
  Effect.gen(function* () {
    const [workspaces, bots, webhooks, uow, submissions, outbox] = yield* Effect.all([
      WorkspaceRepository,
      IntakeBotRepository,
      Webhooks,
      UnitOfWork,
      SubmissionRepository,
      EventOutbox
    ])
    let endpoint = 0
    for (let w = 0; w < message.workspaces; w++) {
      const workspaceId = id("ws")
      yield* workspaces.insert({
        id: workspaceId,
        name: `Drain ${w}`,
        plan: "business",
        status: "active",
        monthlySubmissionQuota: null,
        rateLimitPerMinute: null,
        createdAt: 0,
        updatedAt: 0
      })
      const bot: IntakeBot = {
        id: id("bot"),
        workspaceId,
        name: "Drain form",
        description: "",
        status: "ACTIVE",
        shareSlug: randomUUID().slice(0, 8),
        schema: [{ name: "email", label: "Email", type: "email", required: true }],
        schemaVersion: 1,
        createdAt: 0,
        updatedAt: 0
      }
      yield* bots.insert(bot)
      for (let e = 0; e < message.endpointsPerWorkspace; e++)
        yield* webhooks.create(workspaceId, {
          url: `${message.receiverUrl}/hook/${endpoint++}`,
          events: ["submission.completed"]
        })
      for (let done = 0; done < message.eventsPerWorkspace; done += 500) {
        const at = Date.now()
        yield* uow.transaction(
          Effect.gen(function* () {
            const records = Array.from(
              { length: Math.min(500, message.eventsPerWorkspace - done) },
              (): Submission => ({
                id: id("sub"),
                workspaceId,
                intakeBotId: bot.id,
                data: { email: "ada@example.com" },
                status: "COMPLETED",
                aiSummary: "Email: ada@example.com",
                isTest: false,
                fileCount: 0,
                schemaVersion: 1,
                createdAt: at,
                updatedAt: at
              })
            )
            for (const record of records) yield* submissions.insert(record, [])
            const events = records.map(
              (s): DomainEvent => ({
                id: id("evt"),
                workspaceId,
                type: "submission.completed",
                intakeBotId: bot.id,
                submissionId: s.id,
                contactId: null,
                createdAt: at
              })
            )
            yield* outbox.append(events)
            yield* queueDeliveries(events, 0)
          })
        )
      }
    }
  })

const dispatcher = dispatcherLayer({ concurrency: CONCURRENCY, pollIntervalMs: 1_000 })

const reply = (message: unknown) => process.send?.(message)

runtime.runPromise(Effect.void).then(
  () => reply({ type: "ready" }),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)

process.on("message", (message: DrainMessage) => {
  if (message.type === "seed")
    runtime.runPromise(seed(message)).then(
      () => reply({ type: "seeded" }),
      (error) => {
        console.error(error)
        process.exit(1)
      }
    )
  else if (message.type === "go") {
    resetRoundTripCounts()
    runtime.runFork(Layer.launch(dispatcher))
    reply({ type: "started" })
  } else if (message.type === "read") {
    let sql = 0
    const calls: Record<string, number> = {}
    for (const entry of roundTripCounts().values()) {
      sql += entry.sql
      for (const [call, count] of Object.entries(entry.calls)) calls[call] = (calls[call] ?? 0) + count
    }
    reply({ type: "statements", sql, calls })
  }
})
process.on("disconnect", () => process.exit(0))
