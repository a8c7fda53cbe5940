/** The dispatcher loop under TestClock: bounded concurrency, wake-up on new events, graceful stop. */
import { describe, expect, it } from "@effect/vitest"
import {
  Deliveries,
  DeliveriesLive,
  DeliveryRepository,
  IntakeBots,
  makeWebhookId,
  makeWorkspaceId,
  ReceiverClient,
  type ReceiverRequest,
  StorageUnavailable,
  Submissions,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain"
import { aWorkspace, captureLogs, deliveryRulesLayer, newIntakeBot, requiredOnlyData } from "@intake/testing"
import { Effect, Fiber, Layer, TestClock } from "effect"
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
    Effect.flatMap(Deliveries, (d) =>
      d.list(makeWorkspaceId(workspaceId), makeWebhookId(webhookId), { limit: 100, cursor: null })
    ),
    (listed) => listed.items.map((item) => item.status)
  )

const addresses = { "hooks.example.com": ["93.184.216.34"] }

/**
 * Stops a dispatcher as SIGTERM does, letting TestClock time pass meanwhile: the attempts it
 * finishes are written down after the batch writer's linger (batch-writer.ts).
 */
const stop = (dispatcher: Fiber.RuntimeFiber<unknown, unknown>) =>
  Effect.gen(function* () {
    const stopping = yield* Effect.fork(Fiber.interrupt(dispatcher))
    yield* TestClock.adjust(1_000)
    yield* Fiber.join(stopping)
  })

describe("the dispatcher", () => {
  it.effect("keeps at most `concurrency` attempts in flight and drains the queue", () => {
    const receiver = slowReceiver(1_000)
    return Effect.gen(function* () {
      const { workspaceId, webhookId } = yield* givenEvents(10)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 3, pollIntervalMs: 60_000, claimToken: "d1" })
      )
      for (let second = 0; second < 5; second++) yield* TestClock.adjust(1_000)
      expect(receiver.state.sent).toHaveLength(10)
      expect(receiver.state.maxInFlight).toBe(3)
      expect(yield* statuses(workspaceId, webhookId)).toEqual(Array(10).fill("succeeded"))
      yield* stop(dispatcher)
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
      yield* stop(dispatcher)
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
      yield* stop(dispatcher)
    }).pipe(Effect.provide(withFaultyRepository(receiver.layer, faulty.layer)))
  })

  it.effect(
    "recording that fails past its retries gives the claim back: the attempt is made again within seconds, not after the lease",
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
        yield* stop(dispatcher)
      }).pipe(Effect.provide(withFaultyRepository(receiver.layer, faulty.layer)))
    }
  )
})

describe("the dispatcher's logs", () => {
  it.effect("a store that fails every poll is logged once, and its recovery once", () => {
    const receiver = slowReceiver(0)
    const { lines, layer: logger } = captureLogs()
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
      yield* stop(dispatcher)
      expect(lines.filter((line) => line.level === "WARN").map((line) => line.message)).toEqual([
        "could not claim due deliveries; retrying at each poll, quietly until it works"
      ])
      expect(lines.filter((line) => line.message === "claiming due deliveries again")).toHaveLength(1)
    }).pipe(Effect.provide(Layer.merge(deliveryRulesLayer(receiver.layer, { addresses }), logger)))
  })

  it.effect("stopping says how many attempts it is finishing, then that it stopped", () => {
    const receiver = slowReceiver(5_000)
    const { lines, layer: logger } = captureLogs()
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

describe("leases and the send window", () => {
  it.effect("a frozen dispatcher's attempt is taken over when its 15 s lease ends, and sent once", () => {
    const receiver = slowReceiver(0)
    return Effect.gen(function* () {
      const { workspaceId, webhookId } = yield* givenEvents(1)
      const deliveries = yield* Deliveries
      // A dispatcher claims, then freezes (SIGSTOP, a long pause) before sending.
      const frozen = yield* deliveries.claim(10, "frozen")
      expect(frozen.deliveries).toHaveLength(1)
      const dispatcher = yield* Effect.fork(
        runDispatcher({ concurrency: 4, pollIntervalMs: 1_000, claimToken: "d2" })
      )
      yield* TestClock.adjust(14_000)
      expect(receiver.state.sent).toHaveLength(0)
      yield* TestClock.adjust(1_000)
      yield* TestClock.adjust(1_000)
      expect(receiver.state.sent).toHaveLength(1)
      expect(yield* statuses(workspaceId, webhookId)).toEqual(["succeeded"])
      // The frozen one thaws: past its send window, its attempt is given back unsent.
      const [late] = yield* deliveries.prepare(frozen.deliveries, frozen.claimedAt)
      const made = yield* deliveries.attempt(late!)
      expect(made._tag).toBe("Expired")
      yield* deliveries.record([made], "frozen")
      expect(receiver.state.sent).toHaveLength(1)
      expect(yield* statuses(workspaceId, webhookId)).toEqual(["succeeded"])
      yield* stop(dispatcher)
    }).pipe(Effect.provide(deliveryRulesLayer(receiver.layer, { addresses })))
  })

  it.effect("an attempt starts only while it can end before its lease does", () => {
    const receiver = slowReceiver(0)
    return Effect.gen(function* () {
      const { workspaceId, webhookId } = yield* givenEvents(1)
      const deliveries = yield* Deliveries
      const claimed = yield* deliveries.claim(10, "d1")
      const [prepared] = yield* deliveries.prepare(claimed.deliveries, claimed.claimedAt)
      // 15 s lease, 10 s attempt limit: it may start up to 4 s after its claim.
      yield* TestClock.adjust(4_001)
      const made = yield* deliveries.attempt(prepared!)
      expect(made._tag).toBe("Expired")
      yield* deliveries.record([made], "d1")
      expect(receiver.state.sent).toHaveLength(0)
      // Given back: due again at once, for this dispatcher or another.
      const again = yield* deliveries.claim(10, "d2")
      expect(again.deliveries.map((d) => d.id)).toEqual(claimed.deliveries.map((d) => d.id))
      yield* Effect.flatMap(deliveries.prepare(again.deliveries, again.claimedAt), (ready) =>
        Effect.flatMap(deliveries.attempt(ready[0]!), (sent) => deliveries.record([sent], "d2"))
      )
      expect(receiver.state.sent).toHaveLength(1)
      expect(yield* statuses(workspaceId, webhookId)).toEqual(["succeeded"])
    }).pipe(Effect.provide(deliveryRulesLayer(receiver.layer, { addresses })))
  })
})

describe("a rate limit under load", () => {
  it.effect(
    "no one-second window of sent_at holds more starts than the limit, whatever delays a send after its claim",
    () => {
      const receiver = slowReceiver(120)
      // The first claim's attempt waits 400 ms between its claim and its send (a slow read, a
      // busy process); the next ones go at once. Spaced at the claims only, three would start
      // within one second.
      const delays = [400]
      const slowFirstRead = Layer.effect(
        DeliveryRepository,
        Effect.map(DeliveryRepository, (inner) => ({
          ...inner,
          dispatchSources: (...args: Parameters<typeof inner.dispatchSources>) =>
            Effect.zipRight(Effect.sleep(delays.shift() ?? 0), inner.dispatchSources(...args))
        }))
      )
      return Effect.gen(function* () {
        const workspace = aWorkspace()
        yield* (yield* WorkspaceRepository).insert(workspace)
        const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
        const webhook = yield* (yield* Webhooks).create(workspace.id, {
          url: "https://hooks.example.com/in",
          events: ["submission.completed"],
          rateLimit: 2
        })
        const submissions = yield* Submissions
        for (let i = 0; i < 8; i++)
          yield* submissions.create(workspace.id, bot.id, { data: requiredOnlyData() })
        // Two dispatchers share the queue, each with room for many at once.
        const dispatchers = yield* Effect.all(
          ["d1", "d2"].map((claimToken) =>
            Effect.fork(runDispatcher({ concurrency: 8, pollIntervalMs: 1_000, claimToken }))
          )
        )
        for (let step = 0; step < 120; step++) yield* TestClock.adjust(50)
        const listed = yield* (yield* Deliveries).list(workspace.id, webhook.id, { limit: 100, cursor: null })
        const starts = listed.items
          .flatMap((d) => (d.sentAt === null ? [] : [d.sentAt]))
          .sort((a, b) => a - b)
        expect(starts).toHaveLength(8)
        for (const start of starts)
          expect(starts.filter((s) => s >= start && s < start + 1_000).length).toBeLessThanOrEqual(2)
        yield* Effect.forEach(dispatchers, stop)
      }).pipe(Effect.provide(withFaultyRepository(receiver.layer, slowFirstRead)))
    }
  )
})
