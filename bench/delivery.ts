import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { deliveryEngine, dispatcherLayer } from "@intake/delivery"
import {
  DeliveryWakeups,
  EventOutbox,
  IntakeBotRepository,
  queueDeliveries,
  SubmissionRepository,
  Submissions,
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
import { Clock, Console, Duration, Effect, Layer, Redacted } from "effect"
import { botRecord, eventRecord, submissionRecord, workspaceRecord } from "./records.js"

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000)
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 200)
const CONCURRENCY = Number(process.env.WEBHOOK_DISPATCH_CONCURRENCY ?? 32)
const databaseUrl = process.env.DATABASE_URL

/** Arrival time of the first attempt of each event id. */
const firstArrival = new Map<string, number>()
const eventTime = new Map<string, number>()

const receiver = Effect.acquireRelease(
  Effect.async<{ url: string; close: () => void }>((resume) => {
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const at = Date.now()
        const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        if (!firstArrival.has(payload.id)) {
          firstArrival.set(payload.id, at)
          eventTime.set(payload.id, Date.parse(payload.timestamp))
        }
        response.writeHead(204).end()
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        })
      )
    )
  }),
  (r) => Effect.sync(r.close)
)

const waitForArrivals = (count: number) =>
  Effect.gen(function* () {
    while (firstArrival.size < count) yield* Effect.sleep(Duration.millis(5))
  }).pipe(
    Effect.timeoutFail({ duration: Duration.minutes(5), onTimeout: () => new Error("deliveries stalled") })
  )

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const bench = Effect.gen(function* () {
  const { url } = yield* receiver
  const workspace = workspaceRecord()
  yield* (yield* WorkspaceRepository).insert(workspace)
  const bot = botRecord(workspace.id)
  yield* (yield* IntakeBotRepository).insert(bot)
  yield* (yield* Webhooks).create(workspace.id, { url, events: ["submission.completed"] })
  const [uow, submissions, outbox, wakeups, useCase] = yield* Effect.all([
    UnitOfWork,
    SubmissionRepository,
    EventOutbox,
    DeliveryWakeups,
    Submissions
  ])

  // Throughput: every event queued before the clock starts.
  for (let done = 0; done < EVENTS; done += 500) {
    const now = yield* Clock.currentTimeMillis
    yield* uow.transaction(
      Effect.gen(function* () {
        const records = Array.from({ length: Math.min(500, EVENTS - done) }, () => submissionRecord(bot, now))
        for (const record of records) yield* submissions.insert(record, [])
        const events = records.map(eventRecord)
        yield* outbox.append(events)
        yield* queueDeliveries(events, 0)
      })
    )
  }
  const started = Date.now()
  yield* wakeups.notify
  yield* waitForArrivals(EVENTS)
  const seconds = (Date.now() - started) / 1000
  yield* Console.log(
    `throughput: ${EVENTS} deliveries in ${seconds.toFixed(2)} s = ${Math.round(EVENTS / seconds)} deliveries/s`
  )
  const deliveriesPerSecond = Math.round(EVENTS / seconds)

  // Latency: one event at a time, through the use case (commit, then NOTIFY).
  const before = new Set(firstArrival.keys())
  for (let i = 0; i < LATENCY_EVENTS; i++) {
    yield* useCase.create(workspace.id, bot.id, { data: { email: `person${i}@example.com` } })
    yield* Effect.sleep(Duration.millis(20))
  }
  yield* waitForArrivals(EVENTS + LATENCY_EVENTS)
  const latencies = [...firstArrival.keys()]
    .filter((id) => !before.has(id))
    .map((id) => firstArrival.get(id)! - eventTime.get(id)!)
    .sort((a, b) => a - b)
  yield* Console.log(
    `event-to-first-attempt over ${latencies.length} events: p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms`
  )
  return { deliveriesPerSecond, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
})

const ports =
  databaseUrl === undefined
    ? PgliteTestLayer
    : PostgresPortsLive({ url: Redacted.make(databaseUrl) }).pipe(
        Layer.provideMerge(Layer.merge(InProcessLive, NodePlatformLive))
      )
const services = dispatcherLayer({ concurrency: CONCURRENCY, pollIntervalMs: 1_000 }).pipe(
  Layer.provideMerge(
    Layer.merge(UseCasesLive, deliveryEngine({ allowPrivateNetworks: true })).pipe(
      Layer.provideMerge(Layer.merge(ports, WebhookSettings.layer({ allowPrivateNetworks: true })))
    )
  )
)

const program = Effect.gen(function* () {
  yield* Console.log(
    `delivery bench on ${databaseUrl === undefined ? "PGlite (in memory)" : "PostgreSQL"}, dispatcher concurrency ${CONCURRENCY}, receiver on 127.0.0.1`
  )
  const figures = yield* Effect.scoped(bench)
  // For `pnpm bench`, which runs this file as a child and puts the figures in its table.
  if (process.env.BENCH_RESULT_JSON === "1") {
    const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024)
    yield* Console.log(`bench-result ${JSON.stringify({ ...figures, peakRssMb })}`)
  }
}).pipe(Effect.provide(services))

// `--drain`: the backlog drain of bench/delivery-drain.ts instead; `--sustained`: creates at
// a fixed rate through a server's HTTP API (bench/delivery-sustained.ts).
const run = process.argv.includes("--drain")
  ? import("./delivery-drain.js").then(({ runDrain }) => runDrain())
  : process.argv.includes("--sustained")
    ? import("./delivery-sustained.js").then(({ runSustained }) => runSustained())
    : Effect.runPromise(program)
run.then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
