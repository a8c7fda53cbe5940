/**
 * The checks of a /v1 request, in the order of docs/rules.md, Checks in order; the first
 * that fails answers. Each names the function that performs it:
 *
 * 1. The API key (401 authentication_required): `Access.authenticate`
 *    (packages/domain/src/access/access.ts) parses the bearer key, hashes it, looks it up
 *    and refuses it revoked or expired. A request refused here is rate limited per client
 *    address instead of per key (`refusedKey`: `Access.limitAnonymous`, `clientIp` in
 *    request.ts), so its answer carries the rate-limit headers too.
 * 2. The workspace (403): archived (workspace_archived), then a plan without API access
 *    (feature_not_available): the same `Access.authenticate`, on the key's workspace.
 * 3. The key's rate limit (429 rate_limit_exceeded): `limitedKey` → `Access.limitKey`.
 *    From here every answer, whatever it is, carries the decision's headers (`withDecision`).
 * 4. The route (404 resource_not_found, `route`): `dispatch` → `match` (routes.ts); then the
 *    key's scopes (403 insufficient_scopes): `Access.requireScope`, when the route needs one.
 * 5. The body and the parameters (400 validation_failed), then the operation: the route's
 *    `run`, built by `serve` (routes.ts): the Idempotency-Key header (`idempotencyKey`), the
 *    path, the query, the body (`readJsonBody` in body.ts, `rejectUnknownKeys`, the payload
 *    schema); then the endpoint's handler (handlers-v1.ts; 404, 409, 422, 429 for a plan
 *    quota), through `Idempotency.run` when the request has a key (`idempotent`).
 *
 * `v1` composes them in that order. A chain of flatMaps, no generator and nothing built per
 * request beyond the steps themselves: this runs on every request (docs/performance.md,
 * The request path). The rest of the app (the prefixes, CORS, the request log, the
 * deadline) is app.ts.
 */
import { Access, type ClientAddress, type Principal, type RateLimitDecision } from "@intake/domain/internal"
import { type Cause, Clock, Effect, Option } from "effect"
import { v1Routes } from "./handlers-v1.js"
import { clientIp, type IncomingRequest } from "./request.js"
import type { RequestFacts } from "./request-log.js"
import { causeToResponse, type Reply, rateLimited, routeNotFound, withRateLimitHeaders } from "./responses.js"
import { match, type Route } from "./routes.js"

/** The answer with the rate-limit headers of the decision that admitted or refused it. */
const withDecision = <E, R>(answer: Effect.Effect<Reply, E, R>, decision: RateLimitDecision) =>
  Effect.flatMap(answer, (response) =>
    Effect.map(Clock.currentTimeMillis, (now) => withRateLimitHeaders(response, decision, now))
  )

/**
 * 4 and 5: the route, then its scope (when the request has a principal and the route needs
 * one), then the route's own steps. /admin routes come through here too, with no principal.
 */
export const dispatch = <R>(
  routes: ReadonlyArray<Route<R>>,
  request: IncomingRequest,
  principal: Principal | null,
  facts: RequestFacts
) => {
  const found = match(routes, request.method, request.pathname)
  if (found === undefined) return Effect.succeed(routeNotFound())
  facts.route = found.route.path
  const scope = found.route.scope
  const steps = found.route.run({ request, params: found.params, principal, notes: facts })
  const run =
    principal !== null && Option.isSome(scope)
      ? Effect.zipRight(
          Effect.flatMap(Access, (access) => access.requireScope(principal, scope.value)),
          steps
        )
      : steps
  // Traces on (the request has a span): the operation is a span beneath it (docs/operations.md, Traces).
  return facts.traceParent === undefined
    ? run
    : Effect.withSpan(run, found.route.name, {
        captureStackTrace: false,
        attributes: { "http.route": found.route.path }
      })
}

/** 1 refused: the client's address is rate limited instead, and its answer is the refusal or the 429. */
const refusedKey = (
  access: Access["Type"],
  request: IncomingRequest,
  refusal: Cause.Cause<unknown>,
  facts: RequestFacts,
  trustedProxies: ReadonlyArray<ClientAddress.AddressRange> | undefined
) =>
  Effect.flatMap(access.limitAnonymous(clientIp(request, trustedProxies)), (decision) => {
    facts.decision = decision
    return withDecision(
      decision.allowed ? causeToResponse(refusal) : Effect.succeed(rateLimited(decision)),
      decision
    )
  })

/** 3: the key's rate limit; admitted, 4 and 5 (`dispatch`). Whatever they answer carries the decision. */
const limitedKey = (
  access: Access["Type"],
  request: IncomingRequest,
  principal: Principal,
  facts: RequestFacts
) =>
  Effect.flatMap(access.limitKey(principal), (decision) => {
    facts.decision = decision
    return withDecision(
      decision.allowed
        ? dispatch(v1Routes, request, principal, facts).pipe(Effect.catchAllCause(causeToResponse))
        : Effect.succeed(rateLimited(decision)),
      decision
    )
  })

/** A /v1 request through the checks in order: 1 and 2 (`Access.authenticate`), then 3 to 5. */
export const v1 = (
  request: IncomingRequest,
  facts: RequestFacts,
  trustedProxies: ReadonlyArray<ClientAddress.AddressRange> | undefined
) =>
  Effect.flatMap(Access, (access) =>
    // exit, not either: even a defect while authenticating answers with rate-limit headers.
    Effect.flatMap(Effect.exit(access.authenticate(request.headers.authorization)), (authenticated) => {
      if (authenticated._tag === "Failure")
        return refusedKey(access, request, authenticated.cause, facts, trustedProxies)
      const principal = authenticated.value
      facts.workspaceId = principal.workspace.id
      facts.keyId = principal.apiKey.id
      return limitedKey(access, request, principal, facts)
    })
  )
