/**
 * GET /metrics (docs/operations.md, Metrics): what a scrape reads from the store and the
 * use cases, and the worker's own small HTTP server for it. The server answers /metrics
 * on its own port (apps/server/src/app.ts); both go through `scrapeMetrics` and
 * `metricsAuthorized`.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Access, type AttemptMade, ConnectionPool, Crypto, DeliveryRepository } from "@intake/domain"
import { type IntakeMetrics, Metrics, type ScrapeReadings } from "@intake/node"
import { Clock, Config, Context, Effect, Exit, Layer, Option, Redacted, Runtime } from "effect"

/**
 * The metrics text: the queue's health read in one statement, the open circuits, the pool,
 * and the rate limiter's fail-open count where this process has one. A store that does not
 * answer leaves the queue's gauges NaN (unknown), the rest as they are: a scrape never fails.
 */
export const scrapeMetrics = Effect.gen(function* () {
  const metrics = yield* Metrics
  const now = yield* Clock.currentTimeMillis
  const repository = yield* Effect.serviceOption(DeliveryRepository)
  const health = Option.isNone(repository)
    ? Option.none()
    : yield* Effect.option(repository.value.queueHealth(now))
  const access = yield* Effect.serviceOption(Access)
  const pool = yield* Effect.serviceOption(ConnectionPool)
  const readings: ScrapeReadings = {
    backlog: Option.match(health, { onNone: () => Number.NaN, onSome: (h) => h.pending }),
    backlogOldestSeconds: Option.match(health, {
      onNone: () => Number.NaN,
      onSome: (h) => (h.oldestDueAt === null ? 0 : Math.max(0, now - h.oldestDueAt) / 1000)
    }),
    circuitsOpen: Option.match(health, { onNone: () => Number.NaN, onSome: (h) => h.circuitsOpen }),
    rateLimiterFailOpen: Option.isNone(access) ? 0 : yield* access.value.limiterFailedOpen,
    pool: Option.isNone(pool) ? undefined : pool.value.connections()
  }
  return { text: yield* Effect.promise(() => metrics.render(readings)), contentType: metrics.contentType }
})

/**
 * What became of an attempt, as the metrics and the attempt's span name it: succeeded, failed,
 * skipped (closed unsent: its source or endpoint is gone), or expired (given back unsent).
 */
export const attemptOutcome = (made: AttemptMade) =>
  made._tag === "Expired"
    ? "expired"
    : made._tag === "Dropped"
      ? "skipped"
      : made.result.ok
        ? "succeeded"
        : "failed"

/** Counts an attempt the dispatcher made (or closed unsent) in this process's metrics, when it keeps them. */
export const observeAttempt = (metrics: Option.Option<IntakeMetrics>, made: AttemptMade) =>
  Effect.sync(() => {
    if (Option.isNone(metrics)) return
    const outcome = attemptOutcome(made)
    // An expired attempt was not made: its claim went back, and it is counted when it is.
    if (outcome === "expired") return
    metrics.value.observeDelivery(outcome, made._tag === "Sent" ? made.result.durationMs / 1000 : null)
  })

/**
 * INTAKE_METRICS_TOKEN: when set (and not blank), /metrics wants `Authorization: Bearer
 * <token>`, compared in constant time; unset, /metrics answers anyone, as /healthz does.
 */
export const metricsTokenConfig = Config.option(Config.redacted("INTAKE_METRICS_TOKEN")).pipe(
  Config.map(Option.filter((value) => Redacted.value(value).trim() !== ""))
)

/** Whether `authorization` carries the metrics token (always, when none is set). */
export const metricsAuthorized = (
  token: Option.Option<Redacted.Redacted>,
  authorization: string | undefined
) =>
  Option.isNone(token)
    ? Effect.succeed(true)
    : Effect.map(Crypto, (crypto) =>
        crypto.constantTimeEqual(
          /^bearer +(.+)$/i.exec(authorization ?? "")?.[1] ?? "",
          Redacted.value(token.value)
        )
      )

export interface MetricsServerOptions {
  /** WORKER_METRICS_PORT; 0 picks a free one (tests). */
  readonly port: number
  /** WORKER_METRICS_HOST (default 127.0.0.1: only this machine scrapes unless asked). */
  readonly host: string
  readonly token: Option.Option<Redacted.Redacted>
}

/** The worker's metrics server: where it listens (its port, when 0 was asked for). */
export class MetricsServer extends Context.Tag("@intake/delivery/MetricsServer")<
  MetricsServer,
  { readonly port: number }
>() {}

/**
 * A small node:http server answering GET /metrics (401 without the token when one is set,
 * 404 elsewhere), for a process that serves no HTTP of its own: the worker.
 */
export const metricsServerLayer = (options: MetricsServerOptions) =>
  Layer.scoped(
    MetricsServer,
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<Metrics | Crypto>()
      const run = Runtime.runCallback(runtime)
      const server = createServer((request, response) => {
        const path = (request.url ?? "/").split("?")[0]
        if (request.method !== "GET" || path !== "/metrics") {
          response.writeHead(404, { "content-type": "text/plain" }).end("not found\n")
          return
        }
        run(
          Effect.flatMap(metricsAuthorized(options.token, request.headers.authorization), (allowed) =>
            allowed
              ? Effect.map(scrapeMetrics, ({ text, contentType }) => ({ status: 200, contentType, text }))
              : Effect.succeed({
                  status: 401,
                  contentType: "text/plain",
                  text: "a valid metrics token is required\n"
                })
          ),
          {
            onExit: (exit) => {
              if (Exit.isSuccess(exit))
                response
                  .writeHead(exit.value.status, { "content-type": exit.value.contentType })
                  .end(exit.value.text)
              else response.writeHead(500, { "content-type": "text/plain" }).end("metrics unavailable\n")
            }
          }
        )
      })
      yield* Effect.acquireRelease(
        Effect.async<void, Error>((resume) => {
          server.once("error", (error) => resume(Effect.fail(error)))
          server.listen(options.port, options.host, () => resume(Effect.void))
        }),
        () =>
          Effect.async<void>((resume) => {
            server.close(() => resume(Effect.void))
            server.closeAllConnections()
          })
      )
      return { port: (server.address() as AddressInfo).port }
    })
  )
