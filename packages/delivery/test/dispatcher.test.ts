/** The dispatcher loop under TestClock: bounded concurrency, wake-up on new events, graceful stop. */
import { describe, expect, it } from "@effect/vitest"
import {
  Deliveries,
  DeliveriesLive,
  DeliveryRepository,
  IntakeBots,
  ReceiverClient,
  type ReceiverRequest,
  StorageUnavailable,
  Submissions,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain"
import { aWorkspace, deliveryRulesLayer, newIntakeBot, requiredOnlyData } from "@intake/testing"
import { Effect, Fiber, Layer, Logger, TestClock } from "effect"
import { runDispatcher } from "../src/dispatcher.js"

/** A receiver that takes `delayMs` (TestClock time) to answer 200, counting requests in flight. */
const slowReceiver = (delayMs: number) => {
  const state = { inFlight: 0, maxInFlight: 0, sent: [] as Array<ReceiverRequest> }
  const layer = Layer.succeed(ReceiverClient, {
    send: (request) =>
      Effect.gen(function* () {
        state.inFlight++
        state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
        yield* Effect.sleep(delayMs)
        state.inFlight--
        state.sent.push(request)
        return { status: 200, body: "", retryAfter: null }
      })
  })
  return { state, layer }
}

const givenEvents = (count: number) =>
  Effect.gen(function* () {
    const workspace = aWorkspace()
    yield* (yield* WorkspaceRepository).insert(workspace)
    const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
    const webhook = yield* (yield* Webhooks).create(workspace.id, {
      url: "https://hooks.example.com/in",
      events: ["submission.completed"]
    })
    const submissions = yield* Submissions
    const submit = () => submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
    for (let i = 0; i < count; i++) yield* submit()
    return { workspaceId: workspace.id, webhookId: webhook.id, submit }
  })

const statuses = (workspaceId: string, webhookId: string) =>
  Effect.map(
    Effect.flatMap(Deliveries, (d) => d.list(workspaceId, webhookId, { limit: 100, cursor: null })),
    (listed) => listed.items.map((item) => item.status)
  )

const addresses = { "hooks.example.com": ["93.184.216.34"] }

describe("the dispatcher", () => {
  it.effect("keeps at most `concurrency` attempts in flight and drains the queue", () => {
    const receiver = slowReceiver(1_000)
    return Effect.gen(function* () {
      const { workspaceId, webhookId } = yield* givenEvents(10)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 3, pollIntervalMs: 60_000, claimToken: "d1" })
      )
      for (let second = 0; second < 4; second++) yield* TestClock.adjust(1_000)
      expect(receiver.state.sent).toHaveLength(10)
      expect(receiver.state.maxInFlight).toBe(3)
      expect(yield* statuses(workspaceId, webhookId)).toEqual(Array(10).fill("succeeded"))
      yield* Fiber.interrupt(dispatcher)
    }).pipe(Effect.provide(deliveryRulesLayer(receiver.layer, { addresses })))
  })

  it.effect("a new event leaves at once, without waiting for the next poll", () => {
    const receiver = slowReceiver(0)
    return Effect.gen(function* () {
      const { submit } = yield* givenEvents(0)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 4, pollIntervalMs: 60_000, claimToken: "d1" })
      )
      yield* TestClock.adjust(0)
      yield* submit()
      // No clock time passes: only the wake-up signal can have started the attempt.
      for (let i = 0; i < 20 && receiver.state.sent.length === 0; i++) yield* Effect.yieldNow()
      expect(receiver.state.sent).toHaveLength(1)
      yield* Fiber.interrupt(dispatcher)
    }).pipe(Effect.provide(deliveryRulesLayer(receiver.layer, { addresses })))
  })

  it.effect("stopping finishes the attempts it claimed and claims nothing more", () => {
    const receiver = slowReceiver(5_000)
    return Effect.gen(function* () {
      const { workspaceId, webhookId } = yield* givenEvents(4)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 2, pollIntervalMs: 60_000, claimToken: "d1" })
      )
      yield* TestClock.adjust(1_000)
      expect(receiver.state.inFlight).toBe(2)
      const stopping = yield* Effect.fork(Fiber.interrupt(dispatcher))
      yield* TestClock.adjust(1_000)
      expect(stopping.unsafePoll()).toBeNull()
      yield* TestClock.adjust(4_000)
      yield* Fiber.join(stopping)
      expect(receiver.state.sent).toHaveLength(2)
      expect((yield* statuses(workspaceId, webhookId)).sort()).toEqual([
        "pending",
        "pending",
        "succeeded",
        "succeeded"
      ])
      // What it did not claim is still due for the next dispatcher.
      expect(yield* (yield* Deliveries).claimDue(10, "d2")).toHaveLength(2)
    }).pipe(Effect.provide(deliveryRulesLayer(receiver.layer, { addresses })))
  })
})

describe("the dispatcher during a database blip", () => {
  /** The delivery repository with `completeMany` (the recording write) failing its first `failures` calls, counting them. */
  const failingCompletes = (failures: number) => {
    const state = { calls: 0 }
    const layer = Layer.effect(
      DeliveryRepository,
      Effect.map(DeliveryRepository, (inner) => ({
        ...inner,
        completeMany: (...args: Parameters<typeof inner.completeMany>) =>
          Effect.suspend(() =>
            ++state.calls <= failures
              ? Effect.fail(new StorageUnavailable({ operation: "deliveries.completeMany" }))
              : inner.completeMany(...args)
          )
      }))
    )
    return { state, layer }
  }

  /** The rules over the memory store, with Deliveries built on the faulty repository. */
  const withFaultyRepository = (
    receiver: Layer.Layer<ReceiverClient>,
    faulty: Layer.Layer<DeliveryRepository, never, DeliveryRepository>
  ) => {
    const rules = deliveryRulesLayer(receiver, { addresses })
    // One `rules` (layers are shared by reference), its Deliveries replaced by a fresh one (the
    // shared DeliveriesLive is the one on the sound repository): the right side of a merge wins.
    return Layer.merge(rules, Layer.fresh(DeliveriesLive).pipe(Layer.provide(faulty), Layer.provide(rules)))
  }

  it.effect("an attempt whose recording fails for a moment is recorded within seconds, and sent once", () => {
    const receiver = slowReceiver(0)
    const faulty = failingCompletes(3)
    return Effect.gen(function* () {
      const { workspaceId, webhookId } = yield* givenEvents(1)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 2, pollIntervalMs: 1_000, claimToken: "d1" })
      )
      yield* TestClock.adjust(0)
      for (let i = 0; i < 10; i++) yield* TestClock.adjust(100)
      expect(faulty.state.calls).toBe(4)
      expect(yield* statuses(workspaceId, webhookId)).toEqual(["succeeded"])
      // Long past the lease: nothing is sent again.
      yield* TestClock.adjust(120_000)
      expect(receiver.state.sent).toHaveLength(1)
      yield* Fiber.interrupt(dispatcher)
    }).pipe(Effect.provide(withFaultyRepository(receiver.layer, faulty.layer)))
  })

  it.effect(
    "recording that fails past its retries gives the claim back: the attempt is made again within seconds, not after the 60 s lease",
    () => {
      const receiver = slowReceiver(0)
      // The first attempt's seven tries all fail; the second attempt's first one works.
      const faulty = failingCompletes(7)
      return Effect.gen(function* () {
        const { workspaceId, webhookId } = yield* givenEvents(1)
        const dispatcher = yield* Effect.fork(
          runDispatcher({ concurrency: 2, pollIntervalMs: 1_000, claimToken: "d1" })
        )
        for (let second = 0; second < 10; second++) yield* TestClock.adjust(1_000)
        expect(faulty.state.calls).toBe(8)
        expect(receiver.state.sent).toHaveLength(2)
        expect(yield* statuses(workspaceId, webhookId)).toEqual(["succeeded"])
        yield* Fiber.interrupt(dispatcher)
      }).pipe(Effect.provide(withFaultyRepository(receiver.layer, faulty.layer)))
    }
  )
})

describe("the dispatcher's logs", () => {
  const captured = () => {
    const lines: Array<{ level: string; message: unknown }> = []
    const logger = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ logLevel, message }) => {
        lines.push({ level: logLevel.label, message: Array.isArray(message) ? message[0] : message })
      })
    )
    return { lines, logger }
  }

  it.effect("a store that fails every poll is logged once, and its recovery once", () => {
    const receiver = slowReceiver(0)
    const { lines, logger } = captured()
    let failures = 5
    const flakyClaims = Layer.effect(
      Deliveries,
      Effect.map(Deliveries, (deliveries) => ({
        ...deliveries,
        claim: (limit: number, claimToken: string) =>
          failures-- > 0
            ? Effect.fail(new StorageUnavailable({ operation: "claim due deliveries" }))
            : deliveries.claim(limit, claimToken)
      }))
    )
    return Effect.gen(function* () {
      const { workspaceId, webhookId } = yield* givenEvents(1)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 2, pollIntervalMs: 1_000, claimToken: "d1" }).pipe(
          Effect.provide(flakyClaims)
        )
      )
      for (let second = 0; second < 8; second++) yield* TestClock.adjust(1_000)
      expect(yield* statuses(workspaceId, webhookId)).toEqual(["succeeded"])
      yield* Fiber.interrupt(dispatcher)
      expect(lines.filter((line) => line.level === "WARN").map((line) => line.message)).toEqual([
        "could not claim due deliveries; retrying at each poll, quietly until it works"
      ])
      expect(lines.filter((line) => line.message === "claiming due deliveries again")).toHaveLength(1)
    }).pipe(Effect.provide(Layer.merge(deliveryRulesLayer(receiver.layer, { addresses }), logger)))
  })

  it.effect("stopping says how many attempts it is finishing, then that it stopped", () => {
    const receiver = slowReceiver(5_000)
    const { lines, logger } = captured()
    return Effect.gen(function* () {
      yield* givenEvents(2)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 4, pollIntervalMs: 60_000, claimToken: "d1" })
      )
      yield* TestClock.adjust(1_000)
      const stopping = yield* Effect.fork(Fiber.interrupt(dispatcher))
      yield* TestClock.adjust(5_000)
      yield* Fiber.join(stopping)
      const dispatcherLines = lines
        .map((line) => line.message)
        .filter((message) => JSON.stringify(message).includes("dispatcher"))
      expect(dispatcherLines).toEqual([
        { message: "dispatcher stopping: finishing the attempts it claimed", inFlight: 2 },
        "dispatcher stopped"
      ])
    }).pipe(Effect.provide(Layer.merge(deliveryRulesLayer(receiver.layer, { addresses }), logger)))
  })
})
