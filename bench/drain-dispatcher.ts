import { deliveryEngine, dispatcherLayer } from "@intake/delivery"
import {
  EventOutbox,
  IntakeBotRepository,
  queueDeliveries,
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
import { botRecord, eventRecord, submissionRecord, workspaceRecord } from "./records.js"
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
      const workspace = { ...workspaceRecord(`Drain ${w}`), monthlySubmissionQuota: null }
      const workspaceId = workspace.id
      yield* workspaces.insert(workspace)
      const bot = botRecord(workspaceId)
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
            const records = Array.from({ length: Math.min(500, message.eventsPerWorkspace - done) }, () =>
              submissionRecord(bot, at)
            )
            for (const record of records) yield* submissions.insert(record, [])
            const events = records.map(eventRecord)
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
