/**
 * Idempotency.runOutsideTransaction over the delivery engine on memory, where a unit of
 * work holds the one database lock: a send inside one would stop every other write.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Deliveries,
  type Delivery,
  IDEMPOTENCY_RESERVATION_MS,
  Idempotency,
  IdempotencyConflict,
  IdempotencyLive,
  invalid,
  makeApiKeyId,
  makeWebhookId,
  makeWorkspaceId,
  ReceiverClient,
  UnitOfWork,
  ValidationFailed,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain"
import { answer, aWorkspace, deliveryRulesLayer, uniqueId } from "@intake/testing"
import { Deferred, Effect, Fiber, Layer, TestClock } from "effect"

const RECEIVER = "https://hooks.example.com/intake"

const responses = {
  onSuccess: (delivery: Delivery) => ({ status: 200, body: { delivery } }),
  onFailure: (error: unknown) =>
    error instanceof ValidationFailed ? undefined : { status: 404, body: { error: String(error) } }
}

/** A receiver that reports each call and answers only once `release` is done. */
const heldReceiver = Effect.gen(function* () {
  const called = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  let calls = 0
  const layer = Layer.succeed(
    ReceiverClient,
    ReceiverClient.of({
      send: () =>
        Effect.suspend(() => {
          calls++
          return Deferred.succeed(called, undefined).pipe(
            Effect.zipRight(Deferred.await(release)),
            Effect.as(answer(204))
          )
        })
    })
  )
  return { called, release, calls: () => calls, layer }
})

const scene = (receiver: Layer.Layer<ReceiverClient>) =>
  IdempotencyLive.pipe(
    Layer.provideMerge(
      deliveryRulesLayer(receiver, { addresses: { "hooks.example.com": ["93.184.216.34"] } })
    )
  )

const givenWebhook = Effect.gen(function* () {
  const workspace = aWorkspace()
  yield* (yield* WorkspaceRepository).insert(workspace)
  const webhook = yield* (yield* Webhooks).create(workspace.id, {
    url: RECEIVER,
    events: ["contact.created"]
  })
  return { workspaceId: workspace.id, webhookId: webhook.id }
})

/** What a test gets from `answeringAtOnce`. */
interface Given {
  readonly receiver: Effect.Effect.Success<typeof heldReceiver>
  readonly idempotency: Idempotency["Type"]
  readonly deliveries: Deliveries["Type"]
  readonly workspaceId: string
  readonly webhookId: string
}

/** `body` over a receiver that answers at once, the services of the scene, and a webhook to send to. */
const answeringAtOnce = <A, E>(body: (given: Given) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const receiver = yield* heldReceiver
    yield* Deferred.succeed(receiver.release, undefined)
    return yield* Effect.gen(function* () {
      const idempotency = yield* Idempotency
      const deliveries = yield* Deliveries
      const { workspaceId, webhookId } = yield* givenWebhook
      return yield* body({ receiver, idempotency, deliveries, workspaceId, webhookId })
    }).pipe(Effect.provide(scene(receiver.layer)))
  })

describe("Idempotency.runOutsideTransaction", () => {
  it.live(
    "sends outside any unit of work: other writes go on, a duplicate is in flight, then it replays",
    () =>
      Effect.gen(function* () {
        const receiver = yield* heldReceiver
        yield* Effect.gen(function* () {
          const idempotency = yield* Idempotency
          const deliveries = yield* Deliveries
          const { workspaceId, webhookId } = yield* givenWebhook
          const request = { apiKeyId: makeApiKeyId("key_1"), key: uniqueId("req"), fingerprint: "fp" }
          const test = idempotency.runOutsideTransaction(
            request,
            deliveries.test(workspaceId, webhookId),
            responses
          )
          const first = yield* Effect.fork(test)
          yield* Deferred.await(receiver.called)

          // Another unit of work while the receiver is called: not blocked.
          yield* (yield* UnitOfWork).transaction(givenWebhook).pipe(Effect.timeout("2 seconds"))
          expect(yield* Effect.flip(test)).toBeInstanceOf(IdempotencyConflict)

          yield* Deferred.succeed(receiver.release, undefined)
          const sent = yield* Fiber.join(first)
          expect(sent._tag).toBe("Fresh")
          const delivery = (sent as { value: Delivery }).value
          expect(yield* test).toEqual({ _tag: "Replayed", response: { status: 200, body: { delivery } } })
          expect(receiver.calls()).toBe(1)
        }).pipe(Effect.provide(scene(receiver.layer)))
      })
  )

  it.effect(
    "an operation that outlives its reservation is still answered; the record stored meanwhile stays and replays",
    () =>
      answeringAtOnce(({ receiver, idempotency, deliveries, workspaceId, webhookId }) =>
        Effect.gen(function* () {
          const request = { apiKeyId: makeApiKeyId("key_1"), key: uniqueId("req"), fingerprint: "fp" }
          const started = yield* Deferred.make<void>()
          const gate = yield* Deferred.make<void>()
          // Held past its reservation (a process that stalled), then done.
          const slow = yield* Effect.fork(
            idempotency.runOutsideTransaction(
              request,
              Effect.zipRight(
                Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate)),
                deliveries.test(makeWorkspaceId(workspaceId), makeWebhookId(webhookId))
              ),
              responses
            )
          )
          yield* Deferred.await(started)
          yield* TestClock.adjust(IDEMPOTENCY_RESERVATION_MS + 1)
          const send = idempotency.runOutsideTransaction(
            request,
            deliveries.test(makeWorkspaceId(workspaceId), makeWebhookId(webhookId)),
            responses
          )
          // The reservation ran out: a retry runs and stores its answer.
          const retry = yield* send
          expect(retry._tag).toBe("Fresh")
          yield* Deferred.succeed(gate, undefined)
          // The slow one finds that record when it stores its own: it keeps it, and still answers.
          const answered = yield* Fiber.join(slow)
          expect(answered._tag).toBe("Fresh")
          const again = yield* send
          expect(again).toEqual({
            _tag: "Replayed",
            response: { status: 200, body: { delivery: (retry as { value: Delivery }).value } }
          })
          expect(receiver.calls()).toBe(2)
        })
      )
  )

  it.effect(
    "a failure worth storing replays; one that stores nothing, or an interruption, frees the key",
    () =>
      answeringAtOnce(({ receiver, idempotency, deliveries, workspaceId, webhookId }) =>
        Effect.gen(function* () {
          const run = (key: string, operation: Effect.Effect<Delivery, unknown>) =>
            idempotency.runOutsideTransaction(
              { apiKeyId: makeApiKeyId("key_1"), key, fingerprint: "fp" },
              operation,
              responses
            )

          const missing = yield* Effect.flip(
            run("gone", deliveries.test(makeWorkspaceId(workspaceId), makeWebhookId("wh_missing")))
          )
          expect((missing as { _tag: string })._tag).toBe("ResourceNotFound")
          const replay = yield* run(
            "gone",
            deliveries.test(makeWorkspaceId(workspaceId), makeWebhookId(webhookId))
          )
          expect(replay._tag).toBe("Replayed")
          expect(receiver.calls()).toBe(0)

          yield* Effect.flip(run("invalid", Effect.fail(invalid([{ path: "", message: "no" }]))))
          expect(
            (yield* run("invalid", deliveries.test(makeWorkspaceId(workspaceId), makeWebhookId(webhookId))))
              ._tag
          ).toBe("Fresh")

          const started = yield* Deferred.make<void>()
          const stuck = yield* Effect.fork(
            run("interrupted", Effect.zipRight(Deferred.succeed(started, undefined), Effect.never))
          )
          yield* Deferred.await(started)
          expect(
            yield* Effect.flip(
              run("interrupted", deliveries.test(makeWorkspaceId(workspaceId), makeWebhookId(webhookId)))
            )
          ).toBeInstanceOf(IdempotencyConflict)
          yield* Fiber.interrupt(stuck)
          expect(
            (yield* run(
              "interrupted",
              deliveries.test(makeWorkspaceId(workspaceId), makeWebhookId(webhookId))
            ))._tag
          ).toBe("Fresh")
          expect(receiver.calls()).toBe(2)
        })
      )
  )
})
