import { describe, expect, it } from "@effect/vitest"
import {
  type ApiError,
  Conflict,
  Idempotency,
  IdempotencyConflict,
  IdempotencyLive,
  IdempotencyStore,
  type IdempotentResponses,
  invalid,
  makeApiKeyId,
  makeWorkspaceId,
  notFound,
  ResourceNotFound,
  type StorageUnavailable,
  UnitOfWork,
  ValidationFailed,
  type WebhookEndpoint,
  WebhookRepository,
  Webhooks
} from "@intake/domain"
import { aWebhookEndpoint, givenWorkspace, uniqueId, webhookRulesLayer } from "@intake/testing"
import { Effect, Either, Layer, Ref, TestClock } from "effect"

const HOUR = 60 * 60 * 1000
const body = { url: "https://hooks.example.com/intake", events: ["submission.completed"] }
const rules = webhookRulesLayer({ addresses: { "hooks.example.com": ["93.184.216.34"] } })

/** How the HTTP layer will map outcomes: validation and storage faults are not stored. */
const responses = <A>(
  status: number,
  toBody: (value: A) => unknown
): IdempotentResponses<A, ApiError | StorageUnavailable> => ({
  onSuccess: (value) => ({ status, body: toBody(value) }),
  onFailure: (error) =>
    error._tag === "ValidationFailed" || error._tag === "StorageUnavailable"
      ? undefined
      : { status: error.httpStatus, body: { code: error.code } }
})

const request = (fingerprint: string, apiKeyId = "key_test") => ({
  apiKeyId: makeApiKeyId(apiKeyId),
  key: uniqueId("req"),
  fingerprint
})

describe("Idempotency.fingerprint", () => {
  it.effect("ignores key order and formatting, and tells method, path and body apart", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const base = idempotency.fingerprint("POST", "/v1/webhooks", { url: "u", events: ["a", "b"] })
      expect(
        idempotency.fingerprint("POST", "/v1/webhooks", JSON.parse('{ "events": ["a","b"], "url": "u" }'))
      ).toBe(base)
      expect(idempotency.fingerprint("POST", "/v1/webhooks", { url: "u", events: ["b", "a"] })).not.toBe(base)
      expect(idempotency.fingerprint("POST", "/v1/webhooks/x", { url: "u", events: ["a", "b"] })).not.toBe(
        base
      )
      expect(idempotency.fingerprint("PATCH", "/v1/webhooks", { url: "u", events: ["a", "b"] })).not.toBe(
        base
      )
      expect(base).toMatch(/^[0-9a-f]{64}$/)
    }).pipe(Effect.provide(rules))
  )
})

describe("Idempotency.run", () => {
  it.effect("the same key and body replays the first response; the operation ran once", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const webhooks = yield* Webhooks
      const workspace = yield* givenWorkspace()
      const req = request(idempotency.fingerprint("POST", "/v1/webhooks", body))
      const create = webhooks.create(workspace.id, body)
      const toResponse = responses(200, (webhook: WebhookEndpoint) => ({ webhook }))

      const first = yield* idempotency.run(req, create, toResponse)
      expect(first._tag).toBe("Fresh")
      const created = (first as { value: WebhookEndpoint }).value
      yield* TestClock.adjust(23 * HOUR)
      const second = yield* idempotency.run(req, create, toResponse)
      // The replay carries the secret: only the same API key sees it, within 24 hours.
      expect(second).toEqual({ _tag: "Replayed", response: { status: 200, body: { webhook: created } } })
      expect((yield* webhooks.list(workspace.id, { limit: 10, cursor: null })).items).toHaveLength(1)
    }).pipe(Effect.provide(rules))
  )

  it.effect("the same key with another body is 409 and runs nothing", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const runs = yield* Ref.make(0)
      const operation = Ref.updateAndGet(runs, (n) => n + 1)
      const req = request(idempotency.fingerprint("POST", "/v1/things", { a: 1 }))
      yield* idempotency.run(
        req,
        operation,
        responses(201, (n: number) => ({ n }))
      )
      const other = { ...req, fingerprint: idempotency.fingerprint("POST", "/v1/things", { a: 2 }) }
      const refused = yield* Effect.flip(
        idempotency.run(
          other,
          operation,
          responses(201, (n: number) => ({ n }))
        )
      )
      expect(refused).toBeInstanceOf(IdempotencyConflict)
      expect(yield* Ref.get(runs)).toBe(1)
      // Keys belong to one API key: another key may use the same text freely.
      const otherKey = { ...other, apiKeyId: makeApiKeyId("key_other") }
      expect(
        (yield* idempotency.run(
          otherKey,
          operation,
          responses(201, (n: number) => ({ n }))
        ))._tag
      ).toBe("Fresh")
    }).pipe(Effect.provide(rules))
  )

  it.effect("a record expires 24 hours after creation: the key is fresh again", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const runs = yield* Ref.make(0)
      const operation = Ref.updateAndGet(runs, (n) => n + 1)
      const toResponse = responses(201, (n: number) => ({ n }))
      const req = request("fp")
      yield* idempotency.run(req, operation, toResponse)
      yield* TestClock.adjust(24 * HOUR - 1)
      expect(yield* idempotency.run(req, operation, toResponse)).toEqual({
        _tag: "Replayed",
        response: { status: 201, body: { n: 1 } }
      })
      yield* TestClock.adjust(1)
      expect(yield* idempotency.run(req, operation, toResponse)).toEqual({ _tag: "Fresh", value: 2 })
      // Even with another body: the old record no longer binds the key.
      yield* TestClock.adjust(24 * HOUR)
      expect((yield* idempotency.run({ ...req, fingerprint: "other" }, operation, toResponse))._tag).toBe(
        "Fresh"
      )
    }).pipe(Effect.provide(rules))
  )

  it.effect("a validation failure stores nothing: a retry with the same key runs", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const runs = yield* Ref.make(0)
      const operation = Effect.flatMap(
        Ref.updateAndGet(runs, (n) => n + 1),
        (n) =>
          n === 1
            ? Effect.fail(invalid([{ path: "events", message: "must name at least one event" }]))
            : Effect.succeed(n)
      )
      const req = request("fp")
      const failed = yield* Effect.flip(
        idempotency.run(
          req,
          operation,
          responses(201, (n: number) => ({ n }))
        )
      )
      expect(failed).toBeInstanceOf(ValidationFailed)
      expect(
        yield* idempotency.run(
          req,
          operation,
          responses(201, (n: number) => ({ n }))
        )
      ).toEqual({
        _tag: "Fresh",
        value: 2
      })
    }).pipe(Effect.provide(rules))
  )

  it.effect("a 404 after the operation started is stored and replayed; its writes are undone", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const repo = yield* WebhookRepository
      const runs = yield* Ref.make(0)
      const workspaceId = uniqueId("ws")
      const operation = Effect.gen(function* () {
        yield* Ref.update(runs, (n) => n + 1)
        yield* repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId) }), 10)
        return yield* Effect.fail(notFound("intake_bot"))
      })
      const req = request("fp")
      const toResponse = responses(201, () => ({}))
      const failed = yield* Effect.flip(idempotency.run(req, operation, toResponse))
      expect(failed).toBeInstanceOf(ResourceNotFound)
      expect((yield* repo.list(makeWorkspaceId(workspaceId), { limit: 10, after: null })).items).toEqual([])
      expect(yield* idempotency.run(req, operation, toResponse)).toEqual({
        _tag: "Replayed",
        response: { status: 404, body: { code: "resource_not_found" } }
      })
      expect(yield* Ref.get(runs)).toBe(1)
    }).pipe(Effect.provide(rules))
  )

  it.effect(
    "a record the claim could not see (a duplicate committed meanwhile) is replayed; the writes are undone",
    () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const repo = yield* WebhookRepository
        const req = request("fp")
        const scope = { apiKeyId: req.apiKeyId, key: req.key }
        const first = { status: 201, body: { n: 1 } }
        yield* (yield* UnitOfWork).transaction(store.complete(scope, "fp", first, 0, 24 * HOUR))
        // As on PostgreSQL when the duplicate commits between the claim's snapshot and its lock.
        let stale = true
        const staleFirstClaim = IdempotencyStore.of({
          ...store,
          claim: (...args) => {
            if (!stale) return store.claim(...args)
            stale = false
            return Effect.succeed({ _tag: "Fresh" } as const)
          }
        })
        const workspaceId = uniqueId("ws")
        const runs = yield* Ref.make(0)
        const operation = Effect.zipRight(
          Ref.update(runs, (n) => n + 1),
          Effect.as(
            repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId) }), 10),
            2
          )
        )
        const outcome = yield* Effect.flatMap(Idempotency, (idempotency) =>
          idempotency.run(
            req,
            operation,
            responses(201, (n: number) => ({ n }))
          )
        ).pipe(
          Effect.provide(
            IdempotencyLive.pipe(Layer.provide(Layer.succeed(IdempotencyStore, staleFirstClaim)))
          )
        )
        expect(outcome).toEqual({ _tag: "Replayed", response: first })
        expect(yield* Ref.get(runs)).toBe(1)
        expect((yield* repo.list(makeWorkspaceId(workspaceId), { limit: 10, after: null })).items).toEqual([])
      }).pipe(Effect.provide(rules))
  )

  it.effect("a 409 conflict is stored and replayed", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const req = request("fp")
      const operation = Effect.fail(new Conflict({ message: "The intake bot is paused." }))
      const toResponse = responses(201, () => ({}))
      expect(yield* Effect.flip(idempotency.run(req, operation, toResponse))).toBeInstanceOf(Conflict)
      expect(yield* idempotency.run(req, Effect.succeed("ran"), toResponse)).toEqual({
        _tag: "Replayed",
        response: { status: 409, body: { code: "conflict" } }
      })
    }).pipe(Effect.provide(rules))
  )

  it.effect("a defect stores nothing and leaves none of the operation's writes", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const repo = yield* WebhookRepository
      const workspaceId = uniqueId("ws")
      const req = request("fp")
      const toResponse = responses(201, (n: number) => ({ n }))
      const crashing = Effect.zipRight(
        repo.insertWithinCap(aWebhookEndpoint({ workspaceId: makeWorkspaceId(workspaceId) }), 10),
        Effect.dieMessage("bug")
      )
      const exit = yield* Effect.exit(idempotency.run(req, crashing, toResponse))
      expect(exit._tag).toBe("Failure")
      expect((yield* repo.list(makeWorkspaceId(workspaceId), { limit: 10, after: null })).items).toEqual([])
      expect(yield* idempotency.run(req, Effect.succeed(7), toResponse)).toEqual({ _tag: "Fresh", value: 7 })
    }).pipe(Effect.provide(rules))
  )

  it.effect(
    "20 concurrent runs with one key run the operation exactly once, also with a store that yields",
    () =>
      Effect.gen(function* () {
        const idempotency = yield* Idempotency
        const runs = yield* Ref.make(0)
        const operation = Effect.gen(function* () {
          const n = yield* Ref.updateAndGet(runs, (k) => k + 1)
          // Let the other requests arrive while this one is in flight.
          yield* Effect.yieldNow()
          return n
        })
        const req = request("fp")
        const outcomes = yield* Effect.all(
          Array.from({ length: 20 }, () =>
            Effect.either(
              idempotency.run(
                req,
                operation,
                responses(201, (n: number) => ({ n }))
              )
            )
          ),
          { concurrency: "unbounded" }
        )
        expect(yield* Ref.get(runs)).toBe(1)
        const fresh = outcomes.filter((o) => Either.isRight(o) && o.right._tag === "Fresh")
        expect(fresh).toHaveLength(1)
        for (const outcome of outcomes) {
          if (Either.isLeft(outcome)) expect(outcome.left).toBeInstanceOf(IdempotencyConflict)
          else if (outcome.right._tag === "Replayed")
            expect(outcome.right.response).toEqual({ status: 201, body: { n: 1 } })
        }
      }).pipe(Effect.provide(webhookRulesLayer({ yieldingIdempotencyStore: true })))
  )

  it.effect("purgeExpired removes records past 24 hours", () =>
    Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const store = yield* IdempotencyStore
      const req = request("fp")
      yield* idempotency.run(
        req,
        Effect.succeed(1),
        responses(201, (n: number) => ({ n }))
      )
      yield* TestClock.adjust(24 * HOUR - 1)
      expect(yield* store.purgeExpired(24 * HOUR - 1)).toBe(0)
      expect(yield* store.purgeExpired(24 * HOUR)).toBe(1)
    }).pipe(Effect.provide(rules))
  )
})
