/**
 * Access: who is calling (authenticate), how fast they may call (rate limits, failing
 * open) and what they may do (scopes).
 *
 * Keys are cached in-process by hash for at most 60 s, so a warm request costs no key
 * lookup. Cached entries are checked again on every request (revocation, expiry at
 * `now`, archive, plan), and dropped at once when Provisioning publishes a change through
 * AccessInvalidation; other instances drop theirs when the message reaches them, at the
 * latest when the TTL runs out (docs/rules.md, API keys allows 60 s).
 */
import { Cause, Clock, Effect, Either, Layer, Option, Redacted } from "effect"
import {
  AuthenticationRequired,
  FeatureNotAvailable,
  RateLimitExceeded,
  WorkspaceArchived
} from "../shared/errors.js"
import type { ApiKey, EpochMillis, Workspace } from "../shared/models.js"
import { Crypto } from "../shared/ports.js"
import * as ApiKeyFormat from "./api-key.js"
import {
  ANONYMOUS_REQUESTS_PER_MINUTE,
  hasApiAccess,
  RATE_LIMIT_WINDOW_MS,
  requestsPerMinute
} from "./plans.js"
import {
  AccessInvalidation,
  type AccessInvalidationEvent,
  ApiKeyRepository,
  type RateLimitDecision,
  RateLimiter,
  WorkspaceRepository
} from "./ports.js"
import { checkScope } from "./scopes.js"
import { Access, type Principal } from "./services.js"

export interface AccessSettings {
  /** How long a looked-up key is trusted without asking the repository again (capped at 60 s). */
  readonly keyCacheTtlMs: number
  /** Entries beyond this evict the oldest, so garbage traffic cannot grow the cache. */
  readonly keyCacheMaxEntries: number
  /** last_used_at is written at most once per this interval per key. */
  readonly lastUsedIntervalMs: number
  /** A limiter that has not answered by then is treated as down: the request goes through. */
  readonly limiterTimeoutMs: number
  /** After a limiter failure, requests go through without asking it for this long. */
  readonly limiterCooldownMs: number
}

export const defaultAccessSettings: AccessSettings = {
  keyCacheTtlMs: 60_000,
  keyCacheMaxEntries: 10_000,
  lastUsedIntervalMs: 60_000,
  limiterTimeoutMs: 3_000,
  limiterCooldownMs: 5_000
}

/**
 * Failed operator-token tries per client address and minute. Past them, the address is
 * refused whatever it sends, the right token included (docs/choices.md, Access).
 */
export const OPERATOR_AUTH_FAILURES_PER_MINUTE = 10

/** The longest a revocation made elsewhere may go unnoticed (docs/rules.md, API keys). */
const MAX_KEY_CACHE_TTL_MS = 60_000

interface CacheEntry {
  readonly apiKey: ApiKey
  readonly workspace: Workspace
  readonly cachedAt: EpochMillis
  /** What this instance knows of last_used_at, to skip the write within the interval. */
  lastUsedAt: EpochMillis | null
}

const rejectionMessages: Record<ApiKeyFormat.KeyRejection | "unknown" | "revoked" | "expired", string> = {
  missing: "An API key is required: send Authorization: Bearer <key>.",
  not_bearer: "The Authorization header must use the Bearer scheme.",
  test_key: "Test keys are not accepted by the live API.",
  malformed: "The API key is not valid.",
  bad_checksum: "The API key is not valid.",
  unknown: "The API key is not valid.",
  revoked: "The API key has been revoked.",
  expired: "The API key has expired."
}

const unauthenticated = (reason: keyof typeof rejectionMessages) =>
  new AuthenticationRequired({ message: rejectionMessages[reason] })

export const makeAccessLayer = (overrides: Partial<AccessSettings> = {}) =>
  Layer.scoped(
    Access,
    Effect.gen(function* () {
      const settings = { ...defaultAccessSettings, ...overrides }
      const cacheTtlMs = Math.min(settings.keyCacheTtlMs, MAX_KEY_CACHE_TTL_MS)
      const keys = yield* ApiKeyRepository
      const workspaces = yield* WorkspaceRepository
      const limiter = yield* RateLimiter
      const crypto = yield* Crypto
      const invalidation = yield* AccessInvalidation

      // ------------------------------------------------------------ key cache

      const cache = new Map<string, CacheEntry>()
      // Bumped by every invalidation: a lookup that started before one must not cache what it read.
      let generation = 0

      const invalidate = (event: AccessInvalidationEvent) =>
        Effect.sync(() => {
          if (event._tag === "IntakeBotChanged") return
          generation++
          if (event._tag === "ApiKeyChanged") cache.delete(event.keyHash)
          else
            for (const [hash, entry] of cache)
              if (entry.workspace.id === event.workspaceId) cache.delete(hash)
        })
      yield* invalidation.subscribe(invalidate)

      const remember = (hash: string, entry: CacheEntry, startedIn: number) => {
        if (startedIn !== generation) return
        cache.delete(hash)
        cache.set(hash, entry)
        if (cache.size > settings.keyCacheMaxEntries) {
          const oldest = cache.keys().next()
          if (!oldest.done) cache.delete(oldest.value)
        }
      }

      const load = (hash: string, now: EpochMillis) =>
        Effect.gen(function* () {
          const startedIn = generation
          const apiKey = yield* keys.findByHash(hash)
          if (Option.isNone(apiKey)) return yield* unauthenticated("unknown")
          const workspace = yield* workspaces.findById(apiKey.value.workspaceId)
          if (Option.isNone(workspace)) return yield* unauthenticated("unknown")
          const entry: CacheEntry = {
            apiKey: apiKey.value,
            workspace: workspace.value,
            cachedAt: now,
            lastUsedAt: apiKey.value.lastUsedAt
          }
          remember(hash, entry, startedIn)
          return entry
        })

      const lookup = (hash: string, now: EpochMillis) => {
        const cached = cache.get(hash)
        return cached !== undefined && now < cached.cachedAt + cacheTtlMs
          ? Effect.succeed(cached)
          : load(hash, now)
      }

      const recordUse = (entry: CacheEntry, now: EpochMillis) => {
        if (entry.lastUsedAt !== null && now - entry.lastUsedAt < settings.lastUsedIntervalMs)
          return Effect.void
        entry.lastUsedAt = now
        // Bookkeeping only: a store hiccup here must not refuse an authenticated request.
        return keys
          .touchLastUsed(entry.apiKey.id, now, settings.lastUsedIntervalMs)
          .pipe(Effect.catchAllCause((cause) => Effect.logWarning("could not record last_used_at", cause)))
      }

      // A chain of flatMaps, not a generator: this runs on every request.
      type Refusal = AuthenticationRequired | WorkspaceArchived | FeatureNotAvailable
      const authenticate = (authorization: string | undefined) =>
        Effect.suspend(() => {
          const parsed = ApiKeyFormat.parseBearer(authorization)
          if (Either.isLeft(parsed)) return Effect.fail(unauthenticated(parsed.left))
          return Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.flatMap(
              lookup(crypto.sha256Hex(parsed.right), now),
              (entry): Effect.Effect<Principal, Refusal> => {
                const { apiKey, workspace } = entry
                if (apiKey.revokedAt !== null) return Effect.fail(unauthenticated("revoked"))
                if (apiKey.expiresAt !== null && now >= apiKey.expiresAt)
                  return Effect.fail(unauthenticated("expired"))
                if (workspace.status === "archived")
                  return Effect.fail(new WorkspaceArchived({ message: "This workspace is archived." }))
                if (!hasApiAccess(workspace.plan))
                  return Effect.fail(
                    new FeatureNotAvailable({
                      message: "API access is not included in this workspace's plan.",
                      feature: "api_access"
                    })
                  )
                return Effect.as(recordUse(entry, now), { apiKey, workspace } satisfies Principal)
              }
            )
          )
        })

      // ------------------------------------------------------------ rate limits

      // Until this instant the limiter is considered down and is not asked.
      let openUntil = 0
      // Whether the last answer was a failure: the log tells when this changes, not every request.
      let limiterDown = false
      // While the limiter is down, one request at a time asks whether it is back (the probe).
      let probing = false

      // Requests let through this way, for the operator's metrics (docs/operations.md).
      let failedOpen = 0
      const openDecision = (limit: number, now: EpochMillis): RateLimitDecision => {
        failedOpen++
        return {
          allowed: true,
          limit,
          remaining: Math.max(0, limit - 1),
          resetAt: now + RATE_LIMIT_WINDOW_MS,
          retryAfterSeconds: 0
        }
      }

      /**
       * Asks the limiter (`ask`: a hit or a peek); when it fails or is slow, lets the request
       * through (fail open). After a failure it is not asked for the cool-down; then one
       * request probes it while the others keep failing open at once: a limiter that hangs
       * costs the probe its 3 s bound, not every request that arrives meanwhile.
       */
      const guarded = (ask: Effect.Effect<RateLimitDecision, unknown>, limit: number) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          if (now < openUntil || (limiterDown && probing)) return Effect.succeed(openDecision(limit, now))
          const probe = limiterDown
          if (probe) probing = true
          // The limiter bounds its own wait (the port's contract, settings.limiterTimeoutMs):
          // a failure or a timeout fails open.
          const asked = ask.pipe(
            // A caller that runs requests uninterruptibly can still cut this wait (its client went away).
            Effect.interruptible,
            Effect.tap(() => {
              if (!limiterDown) return Effect.void
              limiterDown = false
              return Effect.logInfo("rate limiter answers again: limits enforced")
            }),
            Effect.catchAllCause((cause) =>
              Effect.gen(function* () {
                // The request was cut off (its client went away): the limiter did not fail,
                // and turning limits off for everyone would let a client disable them at will.
                if (Cause.isInterruptedOnly(cause)) return yield* Effect.interrupt
                const failedAt = yield* Clock.currentTimeMillis
                openUntil = failedAt + settings.limiterCooldownMs
                if (!limiterDown) {
                  limiterDown = true
                  yield* Effect.logWarning(
                    `rate limiter unavailable: failing open, asking again every ${settings.limiterCooldownMs} ms`,
                    cause
                  )
                }
                return openDecision(limit, failedAt)
              })
            )
          )
          // Only a probe has something to undo: the common path pays no finalizer.
          if (!probe) return asked
          return Effect.ensuring(
            asked,
            Effect.sync(() => {
              probing = false
            })
          )
        })

      const limitBucket = (bucket: string, limit: number) =>
        guarded(limiter.hit(bucket, limit, RATE_LIMIT_WINDOW_MS, settings.limiterTimeoutMs), limit)

      const tooManyOperatorFailures = (decision: RateLimitDecision) =>
        new RateLimitExceeded({
          message: "Too many failed operator authentications from this address; retry later.",
          retryAfterSeconds: decision.retryAfterSeconds
        })

      const authorizeOperator = (
        authorization: string | undefined,
        token: Redacted.Redacted,
        clientIp: string
      ) =>
        Effect.gen(function* () {
          const bucket = `operator-failures:${clientIp}`
          const limit = OPERATOR_AUTH_FAILURES_PER_MINUTE
          const given = /^bearer +(.+)$/i.exec(authorization ?? "")?.[1] ?? ""
          if (crypto.constantTimeEqual(given, Redacted.value(token))) {
            // Refused too once the address is past its failures: otherwise a 429 would tell a
            // wrong guess from the token, and guessing would go on at full speed.
            const state = yield* guarded(
              limiter.peek(bucket, limit, RATE_LIMIT_WINDOW_MS, settings.limiterTimeoutMs),
              limit
            )
            if (!state.allowed) return yield* tooManyOperatorFailures(state)
            return
          }
          const decision = yield* guarded(
            limiter.hit(bucket, limit, RATE_LIMIT_WINDOW_MS, settings.limiterTimeoutMs),
            limit
          )
          if (!decision.allowed) return yield* tooManyOperatorFailures(decision)
          return yield* new AuthenticationRequired({ message: "A valid operator token is required." })
        })

      return {
        authenticate,
        authorizeOperator,
        limitKey: (principal) =>
          limitBucket(`key:${principal.apiKey.id}`, requestsPerMinute(principal.workspace)),
        limitAnonymous: (clientIp) => limitBucket(`ip:${clientIp}`, ANONYMOUS_REQUESTS_PER_MINUTE),
        peekAnonymous: (clientIp) =>
          guarded(
            limiter.peek(
              `ip:${clientIp}`,
              ANONYMOUS_REQUESTS_PER_MINUTE,
              RATE_LIMIT_WINDOW_MS,
              settings.limiterTimeoutMs
            ),
            ANONYMOUS_REQUESTS_PER_MINUTE
          ),
        requireScope: (principal, scope) =>
          Either.match(checkScope(principal.apiKey.scopes, scope), {
            onLeft: (error) => Effect.fail(error),
            onRight: () => Effect.void
          }),
        limiterFailingOpen: Effect.map(Clock.currentTimeMillis, (now) => limiterDown || now < openUntil),
        limiterFailedOpen: Effect.sync(() => failedOpen)
      }
    })
  )

export const AccessLive = makeAccessLayer()
