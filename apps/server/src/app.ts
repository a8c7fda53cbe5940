/**
 * The server's HttpApp: one pipeline for every request (decisions.md section 2) and one
 * exit, so that every answer carries the envelope, X-Request-Id and, on /v1, the
 * rate-limit headers, whatever happened inside.
 */
import { randomUUID } from "node:crypto"
import { performance } from "node:perf_hooks"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { openApiDocument } from "@intake/api"
import {
  Access,
  AuthenticationRequired,
  Crypto,
  type Principal,
  type RateLimitDecision
} from "@intake/domain"
import { DatabaseState } from "@intake/worker"
import { Clock, Duration, Effect, FiberId, Option, Redacted, Runtime } from "effect"
import { type CorsOrigins, isPreflight, preflightHeaders, responseCorsHeaders } from "./cors.js"
import { docsPage, makeScalarScript, SCALAR_SCRIPT_PATH } from "./docs.js"
import { adminRoutes } from "./handlers-admin.js"
import { v1Routes } from "./handlers-v1.js"
import { Readiness } from "./readiness.js"
import {
  causeToResponse,
  DeadlineExceeded,
  errorResponse,
  json,
  rateLimited,
  routeNotFound,
  withRateLimitHeaders
} from "./responses.js"
import { match, type Route } from "./routes.js"

export interface AppOptions {
  /** Enables /admin/* when set. */
  readonly adminToken: Option.Option<Redacted.Redacted>
  /** REQUEST_TIMEOUT: a request not answered by then answers 500 (default 30 s). */
  readonly requestTimeout?: Duration.DurationInput
  /** INTAKE_CORS_ORIGINS: unset, CORS is off. */
  readonly corsOrigins?: CorsOrigins | undefined
}

export const DEFAULT_REQUEST_TIMEOUT = Duration.seconds(30)

const ok = () => json({ success: true, data: { status: "ok" } }, 200)

const unavailable: Record<string, string> = {
  database: "The database is not available.",
  redis: "Redis is not available."
}

/**
 * 200 while the database and every other configured service (Redis) answer; 503 in the
 * envelope naming what does not (and nothing of the cause) while one does not. The
 * database is asked through DatabaseState, which logs a change of its answer once, whether
 * this request or the watcher saw it first.
 */
const ready = Effect.gen(function* () {
  const database = yield* (yield* DatabaseState).check
  const readiness = yield* Effect.serviceOption(Readiness)
  const others = Option.isSome(readiness) ? yield* readiness.value.check : {}
  const answers: Record<string, boolean> = { database, ...others }
  const services = Object.fromEntries(
    Object.entries(answers).map(([name, up]) => [name, up ? "ok" : "unavailable"])
  )
  const down = Object.keys(answers).filter((name) => !answers[name])
  if (down.length === 0) return json({ success: true, data: { status: "ok", ...services } }, 200)
  return json(
    {
      success: false,
      error: {
        code: "service_unavailable",
        message: down.map((name) => unavailable[name] ?? `${name} is not available.`).join(" "),
        details: services
      }
    },
    503
  )
})

// The document never changes while the process runs: serialized once, not per request.
let openApiBody: string | undefined
const openApi = () => {
  openApiBody ??= JSON.stringify(openApiDocument())
  return HttpServerResponse.text(openApiBody, { status: 200, contentType: "application/json" })
}

/**
 * What the request log says beside the status: filled in along the pipeline as it learns
 * them (one plain object per request, no fiber-local state).
 */
interface RequestFacts {
  /** The matched route's pattern (/v1/intake-bots/:id), never the raw path. */
  route: string | undefined
  workspaceId: string | undefined
  keyId: string | undefined
}

/** Runs work within what is left of the request's time; past it, fails with DeadlineExceeded. */
type Deadline = <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DeadlineExceeded, R>

/**
 * The deadline of one request, `endsAt` on performance.now()'s scale. HttpApp.toHandled runs
 * requests uninterruptibly: the work runs interruptibly in a fiber of its own, so that the
 * deadline can cut it (an interrupted query is cancelled by @effect/sql-pg), and the answer
 * does not wait for it to wind down (the cancel, or a ROLLBACK @effect/sql runs
 * uninterruptibly, may hang on a connection gone silent as well): that goes on in the
 * background. One fiber and one timer per call, where disconnect and timeoutFail take
 * three fibers and cost a measurable share of a cheap request's throughput.
 */
const deadlineOf =
  (endsAt: number, exceeded: () => DeadlineExceeded): Deadline =>
  <A, E, R>(work: Effect.Effect<A, E, R>) =>
    Effect.flatMap(Effect.runtime<R>(), (runtime) =>
      Effect.async<A, E | DeadlineExceeded>((resume) => {
        let settled = false
        const fiber = Runtime.runFork(runtime)(Effect.interruptible(work))
        const timer = setTimeout(
          () => {
            if (settled) return
            settled = true
            fiber.unsafeInterruptAsFork(FiberId.none)
            resume(Effect.fail(exceeded()))
          },
          Math.max(0, endsAt - performance.now())
        )
        fiber.addObserver((exit) => {
          clearTimeout(timer)
          if (settled) return
          settled = true
          resume(exit)
        })
        // The request itself was interrupted (its client went away): so is the work.
        return Effect.sync(() => {
          clearTimeout(timer)
          settled = true
          fiber.unsafeInterruptAsFork(FiberId.none)
        })
      })
    )

const dispatch = <R>(
  routes: ReadonlyArray<Route<R>>,
  url: URL,
  method: string,
  principal: Principal | null,
  facts: RequestFacts
) => {
  const found = match(routes, method, url.pathname)
  if (found === undefined) return Effect.succeed(routeNotFound())
  facts.route = found.route.path
  return found.route.run({ params: found.params, query: url.searchParams, pathname: url.pathname, principal })
}

const clientIp = (request: HttpServerRequest.HttpServerRequest) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")

/**
 * /v1: authenticate, rate limit (per key, or per IP when the key fails), then route. The
 * deadline bounds the authentication and the route; the limiter has its own 3 s bound,
 * and its decision gives every answer, a timed-out one too, its rate-limit headers.
 */
const v1 = (
  request: HttpServerRequest.HttpServerRequest,
  url: URL,
  facts: RequestFacts,
  deadline: Deadline
) =>
  Effect.gen(function* () {
    const access = yield* Access
    // exit, not either: even a defect while authenticating answers with rate-limit headers.
    const authenticated = yield* Effect.exit(deadline(access.authenticate(request.headers.authorization)))
    let decision: RateLimitDecision
    let response: HttpServerResponse.HttpServerResponse
    if (authenticated._tag === "Failure") {
      decision = yield* access.limitAnonymous(clientIp(request))
      response = decision.allowed ? yield* causeToResponse(authenticated.cause) : rateLimited(decision)
    } else {
      facts.workspaceId = authenticated.value.workspace.id
      facts.keyId = authenticated.value.apiKey.id
      decision = yield* access.limitKey(authenticated.value)
      response = decision.allowed
        ? yield* deadline(dispatch(v1Routes, url, request.method, authenticated.value, facts)).pipe(
            Effect.catchAllCause(causeToResponse)
          )
        : rateLimited(decision)
    }
    return withRateLimitHeaders(response, decision, yield* Clock.currentTimeMillis)
  })

/** /admin: the operator token in constant time, then route; 404 when the interface is off. */
const admin = (
  request: HttpServerRequest.HttpServerRequest,
  url: URL,
  token: Redacted.Redacted,
  facts: RequestFacts
) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const given = /^bearer +(.+)$/i.exec(request.headers.authorization ?? "")?.[1] ?? ""
    if (!crypto.constantTimeEqual(given, Redacted.value(token))) {
      return errorResponse(new AuthenticationRequired({ message: "A valid operator token is required." }))
    }
    return yield* dispatch(adminRoutes, url, request.method, null, facts)
  })

export const makeApp = (options: AppOptions) => {
  const scalarScript = makeScalarScript()
  const timeoutMs = Duration.toMillis(options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT)
  return Effect.gen(function* () {
    const startedAt = performance.now()
    const request = yield* HttpServerRequest.HttpServerRequest
    const requestId = `req_${randomUUID().replaceAll("-", "")}`
    const url = new URL(request.url, "http://localhost")
    const path = url.pathname
    const facts: RequestFacts = { route: undefined, workspaceId: undefined, keyId: undefined }
    const deadline = deadlineOf(
      startedAt + timeoutMs,
      () => new DeadlineExceeded({ requestId, method: request.method, route: facts.route ?? null, timeoutMs })
    )
    const response = yield* Effect.gen(function* () {
      if (path === "/v1" || path.startsWith("/v1/")) {
        const cors = options.corsOrigins
        if (cors === undefined) return yield* v1(request, url, facts, deadline)
        // A preflight carries no key: it is answered before authentication (docs/choices.md, HTTP).
        if (isPreflight(request.method, request.headers)) {
          return HttpServerResponse.empty({
            status: 204,
            headers: preflightHeaders(cors, request.headers.origin)
          })
        }
        const answer = yield* v1(request, url, facts, deadline)
        return HttpServerResponse.setHeaders(answer, responseCorsHeaders(cors, request.headers.origin))
      }
      return yield* deadline(
        Effect.gen(function* () {
          if (path === "/admin" || path.startsWith("/admin/")) {
            return Option.isSome(options.adminToken)
              ? yield* admin(request, url, options.adminToken.value, facts)
              : routeNotFound()
          }
          facts.route = path
          if (request.method === "GET" && path === "/healthz") return ok()
          if (request.method === "GET" && path === "/readyz") return yield* ready
          if (request.method === "GET" && path === "/openapi.json") return openApi()
          if (request.method === "GET" && path === "/docs") return docsPage()
          if (request.method === "GET" && path === SCALAR_SCRIPT_PATH) return yield* scalarScript
          facts.route = undefined
          return routeNotFound()
        })
      )
    }).pipe(Effect.catchAllCause(causeToResponse))
    // The one log call of a request: ids and outcome only, never a header, a key or a body.
    yield* Effect.logInfo({
      message: "request",
      requestId,
      method: request.method,
      route: facts.route ?? null,
      status: response.status,
      durationMs: Math.round((performance.now() - startedAt) * 100) / 100,
      workspaceId: facts.workspaceId ?? null,
      keyId: facts.keyId ?? null
    })
    return HttpServerResponse.setHeader(response, "x-request-id", requestId)
  })
}
