/**
 * The server's HttpApp: one pipeline for every request (docs/rules.md, Checks in order) and one
 * exit, so that every answer carries the envelope, X-Request-Id and, on /v1, the
 * rate-limit headers, whatever happened inside.
 */
import { openApiDocument } from "@intake/api"
import { DatabaseState, metricsAuthorized, scrapeMetrics } from "@intake/delivery"
import {
  Access,
  AuthenticationRequired,
  type ClientAddress,
  type Crypto,
  type Idempotency,
  TraceContext
} from "@intake/domain/internal"
import { Metrics } from "@intake/node"
import { CurrentRequestId, type RequestLogWrite } from "@intake/node/internal"
import { Clock, Duration, Effect, FiberRef, Option, type Redacted } from "effect"
import { dispatch, v1 } from "./checks-in-order.js"
import { type CorsOrigins, isPreflight, preflightHeaders, responseCorsHeaders } from "./cors.js"
import { docsPage, makeScalarScript, SCALAR_SCRIPT_PATH } from "./docs.js"
import { GUIDES_PATH, makeGuidePages } from "./guides.js"
import { type AdminServices, adminRoutes } from "./handlers-admin.js"
import { type V1Services, v1Routes } from "./handlers-v1.js"
import { Readiness } from "./readiness.js"
import { clientIp, type IncomingRequest, socketClientIp } from "./request.js"
import { type RequestFacts, requestLogLine } from "./request-log.js"
import {
  causeToResponse,
  errorResponse,
  internalErrorResponse,
  json,
  jsonText,
  overloaded,
  type Reply,
  routeNotFound,
  withHeader,
  withHeaders,
  withRateLimitHeaders
} from "./responses.js"
import { match, type Route } from "./routes.js"

export interface AppOptions {
  /** Enables /admin/* when set. */
  readonly adminToken: Option.Option<Redacted.Redacted>
  /** REQUEST_TIMEOUT: a request not answered by then answers 500 (default 30 s). */
  readonly requestTimeout?: Duration.DurationInput
  /** INTAKE_TRUSTED_PROXIES: peers whose X-Forwarded-For names the client; none when omitted. */
  readonly trustedProxies?: ReadonlyArray<ClientAddress.AddressRange>
  /** INTAKE_CORS_ORIGINS: unset, CORS is off. */
  readonly corsOrigins?: CorsOrigins | undefined
  /** INTAKE_METRICS_TOKEN: when set, GET /metrics wants it as a bearer token. */
  readonly metricsToken?: Option.Option<Redacted.Redacted>
}

export const DEFAULT_REQUEST_TIMEOUT = Duration.seconds(30)

const ok = () => json({ success: true, data: { status: "ok" } }, 200)

const state = (up: boolean) => (up ? "ok" : "unavailable")

/**
 * 200 while the database answers, 503 (naming it, and nothing of the cause) while it does
 * not: an instance without its database can serve nothing. Redis, when configured, is
 * reported and never decides (docs/rules.md, Running): the limiter fails open by contract,
 * and one shared Redis going down must not take every instance out of a load balancer's
 * rotation. `rate_limiter` says whether limits are enforced now or failing open (the
 * limiter failed and cools down, or its store does not answer, or answers with a
 * configuration fault: then the service reads `misconfigured` and `<name>_fault` says what
 * to fix, docs/operations.md, Redis faults). The database is asked
 * through DatabaseState, which logs a change of its answer once, whether this request or
 * the watcher saw it first.
 */
const ready = Effect.gen(function* () {
  const database = yield* (yield* DatabaseState).check
  const readiness = yield* Effect.serviceOption(Readiness)
  const shared = Option.isSome(readiness) ? yield* readiness.value.check : {}
  const faults = Option.isSome(readiness) ? yield* readiness.value.faults : {}
  const failingOpen =
    (yield* (yield* Access).limiterFailingOpen) ||
    Object.values(shared).some((up) => !up) ||
    Object.keys(faults).length > 0
  const services = {
    database: state(database),
    ...Object.fromEntries(
      Object.entries(shared).map(([name, up]) => [name, name in faults ? "misconfigured" : state(up)])
    ),
    // A service that answers wrongly is named with what to fix (docs/operations.md, Redis faults).
    ...Object.fromEntries(Object.entries(faults).map(([name, fault]) => [`${name}_fault`, fault])),
    rate_limiter: failingOpen ? "failing_open" : "enforcing"
  }
  if (database) return json({ success: true, data: { status: "ok", ...services } }, 200)
  return json(
    {
      success: false,
      error: { code: "service_unavailable", message: "The database is not available.", details: services }
    },
    503
  )
})

/** /readyz once the server is stopping: still serving, but the load balancer should send elsewhere. */
const stopping = () =>
  json(
    {
      success: false,
      error: {
        code: "service_unavailable",
        message: "The server is shutting down.",
        details: { server: "stopping" }
      }
    },
    503
  )

// The document never changes while the process runs: serialized once, not per request.
let openApiBody: string | undefined
const openApi = () => {
  openApiBody ??= JSON.stringify(openApiDocument())
  return jsonText(openApiBody, 200)
}

/** /admin: the operator token (failed tries limited per client address), then route; 404 when the interface is off. */
const admin = (
  request: IncomingRequest,
  token: Redacted.Redacted,
  facts: RequestFacts,
  trustedProxies: AppOptions["trustedProxies"]
) =>
  Effect.gen(function* () {
    yield* (yield* Access).authorizeOperator(
      request.headers.authorization,
      token,
      clientIp(request, trustedProxies)
    )
    return yield* dispatch(adminRoutes, request, null, facts)
  })

/**
 * GET /metrics in Prometheus's text format (docs/operations.md, Metrics): without a key, as
 * /healthz, unless INTAKE_METRICS_TOKEN asks for it; 404 on a runtime that keeps none.
 */
const metricsAnswer = (request: IncomingRequest, token: Option.Option<Redacted.Redacted>) =>
  Effect.flatMap(Effect.serviceOption(Metrics), (metrics) =>
    Option.isNone(metrics)
      ? Effect.succeed(routeNotFound())
      : Effect.flatMap(metricsAuthorized(token, request.headers.authorization), (allowed) =>
          allowed
            ? Effect.map(
                Effect.provideService(scrapeMetrics, Metrics, metrics.value),
                ({ text, contentType }): Reply => ({
                  status: 200,
                  headers: { "content-type": contentType, "cache-control": "no-store" },
                  body: text
                })
              )
            : Effect.succeed(
                withHeader(
                  errorResponse(
                    new AuthenticationRequired({ message: "A valid metrics token is required." })
                  ),
                  "www-authenticate",
                  "Bearer"
                )
              )
        )
  )

/** What the app needs from the runtime (Readiness is optional). */
export type AppServices = V1Services | AdminServices | Access | Idempotency | Crypto

/**
 * The answer to one request, with its X-Request-Id, and its log line. Never fails: a
 * failure or defect anywhere answers in the envelope (the sanitized 500 at worst). Every
 * log line written on the way carries the request id.
 */
export type App<R> = (
  request: IncomingRequest,
  facts: RequestFacts,
  startedAt: number
) => Effect.Effect<Reply, never, R>

/**
 * The name of a request's span: its method and route template (never the raw path, which
 * holds ids); the method alone for a path no route matches.
 */
const spanName = (request: IncomingRequest) => {
  const path = request.pathname
  const routes: ReadonlyArray<Route<unknown>> | undefined =
    path === "/v1" || path.startsWith("/v1/")
      ? v1Routes
      : path === "/admin" || path.startsWith("/admin/")
        ? adminRoutes
        : undefined
  if (routes !== undefined) {
    const found = match(routes, request.method, path)
    return found === undefined ? request.method : `${request.method} ${found.route.path}`
  }
  return request.method === "GET" && STATIC_PATHS.has(path) ? `GET ${path}` : request.method
}

const STATIC_PATHS = new Set(["/openapi.json", "/docs", "/metrics"])

/**
 * `answer` as a server span (docs/operations.md, Traces): continuing the caller's trace when
 * its `traceparent` is well-formed, else starting one. Effect's tracer is on for the
 * request's fiber (the tracing layer turns it off for background work), so the operation,
 * the statements and the outbound calls made for it are spans beneath it.
 */
const tracedAnswer =
  <R>(answer: App<R>, sampleRatio: number): App<R> =>
  (request, facts, startedAt) => {
    // A load balancer's probes, every few seconds, are no one's trace.
    if (request.pathname === "/healthz" || request.pathname === "/readyz")
      return answer(request, facts, startedAt)
    const parent = TraceContext.parseTraceParent(request.headers.traceparent)
    // Not sampled (the caller's flag, or the ratio for a new trace): no span, nothing kept.
    if (!TraceContext.sampled(parent, sampleRatio)) return answer(request, facts, startedAt)
    return Effect.withTracerEnabled(
      Effect.useSpan(
        spanName(request),
        {
          kind: "server",
          captureStackTrace: false,
          root: true,
          ...Option.match(parent, {
            onNone: () => ({}),
            onSome: (parent) => ({ parent })
          }),
          attributes: {
            "http.request.method": request.method,
            "url.path": request.pathname,
            "intake.request_id": facts.requestId
          }
        },
        (span) => {
          facts.traceParent = TraceContext.formatTraceParent(span)
          return Effect.tap(Effect.withParentSpan(answer(request, facts, startedAt), span), (reply) =>
            Effect.sync(() => {
              span.attribute("http.response.status_code", reply.status)
              if (facts.route !== undefined) span.attribute("http.route", facts.route)
              if (facts.submissionId !== undefined) span.attribute("intake.submission_id", facts.submissionId)
            })
          )
        }
      ),
      true
    )
  }

/**
 * `writeRequestLog` writes each request's line (RequestLogWriter: the runtime's, read once by
 * server.ts); `tracing`: the answers are spans, as sampled (TraceContext.Tracing present;
 * absent, nothing of tracing is on the path).
 */
export const makeApp = (
  options: AppOptions,
  writeRequestLog: RequestLogWrite,
  tracing?: TraceContext.Tracing["Type"]
) => {
  const scalarScript = makeScalarScript()
  const guidePages = makeGuidePages()
  let draining = false
  const timeoutMs = Duration.toMillis(options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT)
  const route = (
    request: IncomingRequest,
    facts: RequestFacts
  ): Effect.Effect<Reply, unknown, AppServices> => {
    const path = request.pathname
    if (path === "/v1" || path.startsWith("/v1/")) {
      const cors = options.corsOrigins
      if (cors === undefined) return v1(request, facts, options.trustedProxies)
      const origin = request.headers.origin
      // A preflight carries no key: it is answered before authentication (docs/choices.md, HTTP).
      if (isPreflight(request.method, request.headers as Readonly<Record<string, string | undefined>>)) {
        return Effect.succeed<Reply>({ status: 204, headers: preflightHeaders(cors, origin), body: "" })
      }
      return Effect.map(v1(request, facts, options.trustedProxies), (answer) =>
        withHeaders(answer, responseCorsHeaders(cors, origin))
      )
    }
    if (path === "/admin" || path.startsWith("/admin/")) {
      return Option.isSome(options.adminToken)
        ? admin(request, options.adminToken.value, facts, options.trustedProxies)
        : Effect.succeed(routeNotFound())
    }
    if (request.method === "GET") {
      facts.route = path
      if (path === "/healthz") return Effect.succeed(ok())
      if (path === "/readyz") return draining ? Effect.succeed(stopping()) : ready
      if (path === "/openapi.json") return Effect.succeed(openApi())
      if (path === "/docs") return Effect.succeed(docsPage())
      if (path === "/metrics") return metricsAnswer(request, options.metricsToken ?? Option.none())
      if (path === SCALAR_SCRIPT_PATH) return scalarScript
      if (path === GUIDES_PATH || path.startsWith(`${GUIDES_PATH}/`)) {
        return Effect.map(guidePages(path), (page) => {
          if (page !== undefined) return page
          facts.route = undefined
          return routeNotFound()
        })
      }
      facts.route = undefined
    }
    return Effect.succeed(routeNotFound())
  }
  // Each request is a fiber of its own (server.ts): the id is set on it, not scoped.
  const plainAnswer = (request: IncomingRequest, facts: RequestFacts, startedAt: number) =>
    Effect.zipRight(
      FiberRef.set(CurrentRequestId, facts.requestId),
      route(request, facts).pipe(
        Effect.catchAllCause(causeToResponse),
        Effect.tap((response) => writeRequestLog(requestLogLine(request, facts, response.status, startedAt))),
        Effect.map((response) => withHeader(response, "x-request-id", facts.requestId))
      )
    )
  /**
   * The answer to a request that ran out of time (REQUEST_TIMEOUT; most likely a database
   * gone silent): the sanitized 500, with the rate-limit headers of its decision, or, on
   * /v1 before one was taken (authentication hung), of the caller's address, as a failed
   * authentication answers. Logged with ids only: what the request carried stays out.
   */
  const deadlineExceeded = (request: IncomingRequest, facts: RequestFacts, startedAt: number) =>
    Effect.gen(function* () {
      const { requestId } = facts
      yield* FiberRef.set(CurrentRequestId, requestId)
      yield* Effect.logError({
        message: "request exceeded its deadline",
        requestId,
        method: request.method,
        route: facts.route ?? null,
        timeoutMs
      })
      let response = internalErrorResponse()
      const path = request.pathname
      const decision =
        facts.decision ??
        (path === "/v1" || path.startsWith("/v1/")
          ? yield* Effect.flatMap(Access, (access) =>
              access.limitAnonymous(clientIp(request, options.trustedProxies))
            )
          : undefined)
      if (decision !== undefined) {
        response = withRateLimitHeaders(response, decision, yield* Clock.currentTimeMillis)
      }
      yield* writeRequestLog(requestLogLine(request, facts, response.status, startedAt))
      return withHeader(response, "x-request-id", requestId)
    })
  /**
   * An answer given before the request was read (docs/rules.md, Overload): a request node's
   * parser refused, or one an overloaded server sheds. It has no valid key, so it carries the
   * per-address bucket's rate-limit headers, looked at without counting (the request never
   * reached authentication), and its X-Request-Id. `address` is the client's address as the
   * request's headers name it, or the socket's when none could be read.
   */
  const answerUnread = (reply: Reply, requestId: string, address: string) =>
    Effect.flatMap(Access, (access) =>
      Effect.flatMap(access.peekAnonymous(address), (decision) =>
        Effect.map(Clock.currentTimeMillis, (now) =>
          withHeader(withRateLimitHeaders(reply, decision, now), "x-request-id", requestId)
        )
      )
    )
  /** A request refused before node's parser finished it: the per-address limits of its socket. */
  const answerMalformed = (reply: Reply, requestId: string, remoteAddress: string | undefined) =>
    answerUnread(reply, requestId, socketClientIp(remoteAddress))
  /**
   * A request shed by an overloaded server before its body is read (server.ts): 429
   * rate_limit_exceeded with Retry-After, logged as any request.
   */
  const shed = (request: IncomingRequest, facts: RequestFacts, startedAt: number) =>
    Effect.zipRight(
      FiberRef.set(CurrentRequestId, facts.requestId),
      Effect.tap(
        answerUnread(overloaded(), facts.requestId, clientIp(request, options.trustedProxies)),
        (response) => writeRequestLog(requestLogLine(request, facts, response.status, startedAt))
      )
    )
  /** From now on /readyz answers 503 (server.ts, when the server is told to stop). */
  const startDraining = () => {
    draining = true
  }
  const answer = tracing === undefined ? plainAnswer : tracedAnswer(plainAnswer, tracing.sampleRatio)
  return { answer, answerMalformed, deadlineExceeded, shed, startDraining, timeoutMs }
}
