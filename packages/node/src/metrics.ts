/**
 * The processes' metrics in Prometheus's text format (docs/operations.md, Metrics): one
 * prom-client registry per process (or per server in the tests), with the Node process
 * defaults, the event loop's lag, and Intake's own families.
 *
 * The request families are counted on the hot path without prom-client: its `inc` and
 * `observe` hash their labels into a string on every call (about 1.5 µs a request here),
 * where a request needs one map walk to a cell of plain numbers (RequestCells). The cells
 * are written as text at scrape time, before the registry's families.
 */
import { monitorEventLoopDelay } from "node:perf_hooks"
import type { PoolConnections } from "@intake/domain"
import { Context, Effect, Layer } from "effect"
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client"

/** Request durations, in seconds: a fast cached read to the request deadline's neighbourhood. */
export const REQUEST_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30
] as const
/** Delivery durations, in seconds: a receiver answering at once to its 10 s limit. */
export const DELIVERY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const

/** The route label of a request that matched no route (one value, so cardinality stays bounded). */
export const UNMATCHED_ROUTE = "unmatched"

/** A histogram's numbers: per bucket (not cumulative), plus the sum and the count. */
interface HistogramCell {
  readonly buckets: Float64Array
  sum: number
  count: number
}

const histogramCell = (bounds: ReadonlyArray<number>): HistogramCell => ({
  buckets: new Float64Array(bounds.length + 1),
  sum: 0,
  count: 0
})

const observeInto = (cell: HistogramCell, bounds: ReadonlyArray<number>, value: number) => {
  let index = 0
  while (index < bounds.length && value > bounds[index]!) index++
  cell.buckets[index]!++
  cell.sum += value
  cell.count++
}

/** A label value as the text format writes it: backslash, double quote and newline escaped. */
const labelValue = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

const labelText = (labels: ReadonlyArray<readonly [string, string]>) =>
  labels.length === 0 ? "" : `{${labels.map(([name, value]) => `${name}="${labelValue(value)}"`).join(",")}}`

/** The lines of one histogram's series: cumulative buckets, then its sum and count. */
const histogramLines = (
  name: string,
  bounds: ReadonlyArray<number>,
  labels: ReadonlyArray<readonly [string, string]>,
  cell: HistogramCell
) => {
  const lines: Array<string> = []
  let cumulative = 0
  bounds.forEach((bound, index) => {
    cumulative += cell.buckets[index]!
    lines.push(`${name}_bucket${labelText([...labels, ["le", String(bound)]])} ${cumulative}`)
  })
  lines.push(`${name}_bucket${labelText([...labels, ["le", "+Inf"]])} ${cell.count}`)
  lines.push(`${name}_sum${labelText(labels)} ${cell.sum}`)
  lines.push(`${name}_count${labelText(labels)} ${cell.count}`)
  return lines
}

/** The request counts by route, method and status, and durations by route. */
class RequestCells {
  readonly routes = new Map<
    string,
    { readonly duration: HistogramCell; readonly methods: Map<string, Map<number, { count: number }>> }
  >()

  observe(route: string | null, method: string, status: number, seconds: number) {
    const label = route ?? UNMATCHED_ROUTE
    let byRoute = this.routes.get(label)
    if (byRoute === undefined) {
      byRoute = { duration: histogramCell(REQUEST_BUCKETS), methods: new Map() }
      this.routes.set(label, byRoute)
    }
    let byMethod = byRoute.methods.get(method)
    if (byMethod === undefined) {
      byMethod = new Map()
      byRoute.methods.set(method, byMethod)
    }
    const counted = byMethod.get(status)
    if (counted === undefined) byMethod.set(status, { count: 1 })
    else counted.count++
    observeInto(byRoute.duration, REQUEST_BUCKETS, seconds)
  }

  /** The two request families in the text format. */
  render() {
    const requests = [
      "# HELP intake_http_requests_total HTTP requests answered, by route template, method and status.",
      "# TYPE intake_http_requests_total counter"
    ]
    const durations = [
      "# HELP intake_http_request_duration_seconds Time from a request's arrival to its answer, by route template.",
      "# TYPE intake_http_request_duration_seconds histogram"
    ]
    for (const [route, { duration, methods }] of this.routes) {
      for (const [method, statuses] of methods)
        for (const [status, { count }] of statuses)
          requests.push(
            `intake_http_requests_total${labelText([
              ["route", route],
              ["method", method],
              ["status", String(status)]
            ])} ${count}`
          )
      durations.push(
        ...histogramLines(
          "intake_http_request_duration_seconds",
          REQUEST_BUCKETS,
          [["route", route]],
          duration
        )
      )
    }
    return `${requests.join("\n")}\n\n${durations.join("\n")}\n`
  }
}

/** What a scrape reads from the store and the use cases, as numbers. */
export interface ScrapeReadings {
  readonly backlog: number
  /** Seconds since the oldest pending attempt fell due; 0 when none is due. */
  readonly backlogOldestSeconds: number
  readonly circuitsOpen: number
  /** The requests let through because the rate limiter failed, since the process started. */
  readonly rateLimiterFailOpen: number
  readonly pool: PoolConnections | undefined
}

export type DeliveryOutcome = "succeeded" | "failed" | "skipped"

/** How often the event loop's delay is sampled, by prom-client's monitor and by this module's. */
const EVENT_LOOP_SAMPLE_MS = 100

export const makeMetrics = () => {
  const registry = new Registry()
  // Each sample of an event loop monitor is a timer waking the process: prom-client's (10 ms
  // by default) and this one (20 ms) cost about 3 ms of CPU a second in an idle process; at
  // 100 ms, about a fifth of that, and a mean over a scrape interval is as good.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })
  const loopDelay = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS })
  loopDelay.enable()

  const requests = new RequestCells()
  let readings: ScrapeReadings = {
    backlog: 0,
    backlogOldestSeconds: 0,
    circuitsOpen: 0,
    rateLimiterFailOpen: 0,
    pool: undefined
  }
  // A delivery takes milliseconds: prom-client's own counting is cheap enough there.
  const deliveries = new Counter({
    name: "intake_webhook_deliveries_total",
    help: "Webhook delivery attempts this process's dispatcher made, by outcome (succeeded, failed, skipped: closed unsent).",
    labelNames: ["outcome"],
    registers: [registry]
  })
  for (const outcome of ["succeeded", "failed", "skipped"]) deliveries.inc({ outcome }, 0)
  const deliveryDuration = new Histogram({
    name: "intake_webhook_delivery_duration_seconds",
    help: "Time a sent webhook delivery attempt took, from its request to the receiver's answer.",
    buckets: [...DELIVERY_BUCKETS],
    registers: [registry]
  })
  new Counter({
    name: "intake_rate_limiter_fail_open_total",
    help: "Requests let through because the rate limiter failed or did not answer (docs/rules.md).",
    registers: [registry],
    collect() {
      this.reset()
      this.inc(readings.rateLimiterFailOpen)
    }
  })
  const gauge = (
    name: string,
    help: string,
    read: (gauge: Gauge<string>) => void,
    labelNames: Array<string> = []
  ) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        read(this)
      }
    })
  gauge(
    "intake_webhook_backlog",
    "Pending webhook delivery attempts: due now, or waiting for their time.",
    (g) => g.set(readings.backlog)
  )
  gauge(
    "intake_webhook_backlog_oldest_seconds",
    "How long the earliest pending webhook delivery attempt is past its due time (0 when none is late).",
    (g) => g.set(readings.backlogOldestSeconds)
  )
  gauge("intake_webhook_circuits_open", "Webhook endpoints whose circuit is open now.", (g) =>
    g.set(readings.circuitsOpen)
  )
  gauge(
    "intake_db_pool_connections",
    "The database pool's connections, by state (total, idle, waiting: callers waiting for one).",
    (g) => {
      g.reset()
      const pool = readings.pool
      if (pool === undefined) return
      g.set({ state: "total" }, pool.total)
      if (pool.idle !== null) g.set({ state: "idle" }, pool.idle)
      if (pool.waiting !== null) g.set({ state: "waiting" }, pool.waiting)
    },
    ["state"]
  )
  gauge(
    "intake_event_loop_lag_seconds",
    "The event loop's delay since the previous scrape (mean of perf_hooks' monitorEventLoopDelay).",
    (g) => {
      const mean = loopDelay.count === 0 ? 0 : loopDelay.mean
      g.set(Number.isFinite(mean) ? mean / 1e9 : 0)
      loopDelay.reset()
    }
  )

  return {
    /** One answered request (the request log line's fields: route template, method, status, duration). */
    observeRequest: (route: string | null, method: string, status: number, seconds: number) =>
      requests.observe(route, method, status, seconds),
    /** One attempt the dispatcher made or closed unsent. */
    observeDelivery: (outcome: DeliveryOutcome, seconds: number | null) => {
      deliveries.inc({ outcome })
      if (seconds !== null) deliveryDuration.observe(seconds)
    },
    /** The families in Prometheus's text format, with `current` as the scrape-time readings. */
    render: async (current: ScrapeReadings) => {
      readings = current
      return `${requests.render()}\n${await registry.metrics()}`
    },
    contentType: registry.contentType,
    close: () => {
      loopDelay.disable()
      registry.clear()
    }
  }
}

export type IntakeMetrics = ReturnType<typeof makeMetrics>

/** This process's metrics (docs/operations.md, Metrics). */
export class Metrics extends Context.Tag("@intake/node/Metrics")<Metrics, IntakeMetrics>() {}

export const MetricsLive = Layer.scoped(
  Metrics,
  Effect.acquireRelease(Effect.sync(makeMetrics), (metrics) => Effect.sync(metrics.close))
)
