/** Memory adapters of the webhook endpoint repository and the idempotency store. */
import {
  Cursor,
  type IdempotencyClaim,
  IdempotencyClaimNotFresh,
  IdempotencyConflict,
  IdempotencyRecordExists,
  type IdempotencyScope,
  IdempotencyStore,
  PlanLimitExceeded,
  WebhookRepository
} from "@intake/domain/internal"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase } from "./database.js"

export const MemoryWebhookRepository = Layer.effect(
  WebhookRepository,
  Effect.gen(function* () {
    const db = yield* MemoryDatabase
    return WebhookRepository.of({
      insertWithinCap: (endpoint, max) =>
        Effect.flatten(
          db.run((t, write) => {
            let current = 0
            for (const other of t.webhooks.values()) if (other.workspaceId === endpoint.workspaceId) current++
            if (current >= max)
              return Effect.fail(
                new PlanLimitExceeded({
                  message: `The plan allows ${max} webhook endpoints.`,
                  resource: "webhook_endpoints",
                  current,
                  max
                })
              )
            write.set(t.webhooks, endpoint.id, endpoint)
            return Effect.void
          })
        ),
      // The secrets stay as stored: only rotateSecret changes them.
      update: (endpoint) =>
        db.run((t, write) => {
          const stored = t.webhooks.get(endpoint.id)
          write.set(
            t.webhooks,
            endpoint.id,
            stored === undefined
              ? endpoint
              : {
                  ...endpoint,
                  secret: stored.secret,
                  previousSecret: stored.previousSecret,
                  previousSecretExpiresAt: stored.previousSecretExpiresAt
                }
          )
        }),
      rotateSecret: (workspaceId, id, secret, previousExpiresAt, now) =>
        db.run((t, write) => {
          const current = t.webhooks.get(id)
          if (current?.workspaceId !== workspaceId) return Option.none()
          const rotated = {
            ...current,
            secret,
            previousSecret: previousExpiresAt === null ? null : current.secret,
            previousSecretExpiresAt: previousExpiresAt,
            updatedAt: now
          }
          write.set(t.webhooks, id, rotated)
          return Option.some(rotated)
        }),
      findInWorkspace: (workspaceId, id) =>
        db.run((t) =>
          Option.fromNullable(t.webhooks.get(id)).pipe(Option.filter((w) => w.workspaceId === workspaceId))
        ),
      list: (workspaceId, page) =>
        db.run((t) => {
          const items = [...t.webhooks.values()]
            .filter((w) => w.workspaceId === workspaceId && Cursor.isAfter(w, page.after))
            .sort(Cursor.newestFirst)
          return { items: items.slice(0, page.limit), hasMore: items.length > page.limit }
        }),
      delete: (workspaceId, id) =>
        db.run((t, write) => {
          if (t.webhooks.get(id)?.workspaceId !== workspaceId) return false
          write.remove(t.webhooks, id)
          return true
        })
    })
  })
)

const recordKey = (scope: IdempotencyScope) => `${scope.apiKeyId}|${scope.key}`

const inFlight = () =>
  new IdempotencyConflict({ message: "A request with this Idempotency-Key is still in progress." })

/**
 * Claims need no in-flight marker here: the database lock serializes units of work, so
 * a concurrent duplicate waits for the first one and then sees its stored response. A
 * reservation (an operation that runs outside any unit of work) is a record without a
 * response until it is completed or released.
 */
export const MemoryIdempotencyStore = Layer.effect(
  IdempotencyStore,
  Effect.gen(function* () {
    const db = yield* MemoryDatabase
    /** What a claim finds, decided synchronously inside one `db.run`. */
    const claimIn = (
      t: MemoryDatabase["tables"],
      scope: IdempotencyScope,
      fingerprint: string,
      now: number
    ): IdempotencyClaim | IdempotencyConflict => {
      const record = t.idempotency.get(recordKey(scope))
      if (record === undefined || record.expiresAt <= now) return { _tag: "Fresh" }
      if (record.response === null) return inFlight()
      if (record.fingerprint !== fingerprint)
        return new IdempotencyConflict({ message: "This Idempotency-Key was used with another request." })
      return { _tag: "Replay", response: record.response }
    }
    const answer = (found: IdempotencyClaim | IdempotencyConflict) =>
      found instanceof IdempotencyConflict ? Effect.fail(found) : Effect.succeed(found)
    return IdempotencyStore.of({
      claim: (scope, fingerprint, now) =>
        Effect.flatMap(
          db.run((t) => claimIn(t, scope, fingerprint, now)),
          answer
        ),
      claimFresh: (scope, fingerprint, now) =>
        Effect.flatMap(
          db.run((t) => claimIn(t, scope, fingerprint, now)),
          (found) =>
            !(found instanceof IdempotencyConflict) && found._tag === "Fresh"
              ? Effect.void
              : Effect.fail(new IdempotencyClaimNotFresh())
        ),
      reserve: (scope, fingerprint, now, until) =>
        Effect.flatMap(
          db.run((t, write) => {
            const found = claimIn(t, scope, fingerprint, now)
            if (!(found instanceof IdempotencyConflict) && found._tag === "Fresh")
              write.set(t.idempotency, recordKey(scope), {
                fingerprint,
                response: null,
                createdAt: now,
                expiresAt: until
              })
            return found
          }),
          answer
        ),
      release: (scope, fingerprint) =>
        db.run((t, write) => {
          const record = t.idempotency.get(recordKey(scope))
          if (record?.response === null && record.fingerprint === fingerprint)
            write.remove(t.idempotency, recordKey(scope))
        }),
      complete: (scope, fingerprint, response, createdAt, expiresAt) =>
        db
          .run((t, write) => {
            const stored = t.idempotency.get(recordKey(scope))
            // This request's own reservation is replaced; another unexpired record is kept.
            const ownReservation = stored?.response === null && stored.fingerprint === fingerprint
            if (stored !== undefined && stored.expiresAt > createdAt && !ownReservation) return false
            write.set(t.idempotency, recordKey(scope), { fingerprint, response, createdAt, expiresAt })
            return true
          })
          .pipe(
            Effect.flatMap((stored) => (stored ? Effect.void : Effect.fail(new IdempotencyRecordExists())))
          ),
      purgeExpired: (now) =>
        db.run((t, write) => {
          const expired = [...t.idempotency]
            .filter(([, record]) => record.expiresAt <= now)
            .map(([key]) => key)
          for (const key of expired) write.remove(t.idempotency, key)
          return expired.length
        })
    })
  })
)

/** The webhook and idempotency ports over one MemoryDatabase (provide it once, shared). */
export const MemoryWebhookPortsLive = Layer.mergeAll(MemoryWebhookRepository, MemoryIdempotencyStore)
