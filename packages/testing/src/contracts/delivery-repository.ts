/**
 * The contract every DeliveryRepository adapter keeps. Each test runs on a fresh layer
 * (the queue is global: a claim sees every due attempt), so an adapter's layer should
 * give a fresh store when built.
 */

import { describe, expect, it } from "@effect/vitest"
import {
  type Delivery,
  type DeliveryIsolation,
  DeliveryRepository,
  EventOutbox,
  makeWebhookId,
  makeWorkspaceId,
  StorageUnavailable,
  UnitOfWork,
  type WebhookEndpoint,
  WebhookRepository
} from "@intake/domain"
import { Effect, Either, type Layer, Option } from "effect"
import { aDelivery } from "../fixtures-deliveries.js"
import { domainEventRecord, intakeBotRecord, submissionRecord } from "../fixtures-submissions.js"
import { aWebhookEndpoint } from "../fixtures-webhooks.js"
import { uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

type Ports = DeliveryRepository | WebhookRepository | EventOutbox | UnitOfWork

const LEASE = 60_000
const DAY = 86_400_000

export const deliveryRepositoryContract = (name: string, theLayer: Layer.Layer<Ports>): void => {
  describe(`DeliveryRepository contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, Ports>) =>
      it.effect(title, () => Effect.provide(body(), checkedStores(theLayer)))

    const givenEndpoint = (overrides: Partial<WebhookEndpoint> = {}) =>
      Effect.gen(function* () {
        const endpoint = aWebhookEndpoint({ workspaceId: makeWorkspaceId(uniqueId("ws")), ...overrides })
        yield* (yield* WebhookRepository).insertWithinCap(endpoint, 100)
        return endpoint
      })

    const ids = (deliveries: ReadonlyArray<Delivery>) => deliveries.map((d) => d.id).sort()

    test("claims only due attempts, earliest first, up to the limit", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const [a, b, c, later] = [1, 2, 3, 4].map(() => aDelivery({ webhookId: endpoint.id }))
        yield* repo.enqueue([b!], 2_000)
        yield* repo.enqueue([a!], 1_000)
        yield* repo.enqueue([c!], 3_000)
        yield* repo.enqueue([later!], 10_000)
        expect(yield* repo.claimDue(500, 10, LEASE, "t1")).toEqual([])
        const first = yield* repo.claimDue(5_000, 2, LEASE, "t1")
        expect(first.map((d) => d.id)).toEqual([a!.id, b!.id])
        expect(first[0]).toEqual(a)
        expect((yield* repo.claimDue(5_000, 10, LEASE, "t2")).map((d) => d.id)).toEqual([c!.id])
        expect(yield* repo.nextDueAt(5_000)).toEqual(Option.some(10_000))
      }))

    test("the queue's health: pending attempts, the earliest due time, the circuits open now", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        expect(yield* repo.queueHealth(1_000)).toEqual({ pending: 0, oldestDueAt: null, circuitsOpen: 0 })
        const endpoint = yield* givenEndpoint()
        yield* givenEndpoint({ consecutiveFails: 3, circuitOpenUntil: 5_000 })
        yield* givenEndpoint({ consecutiveFails: 3, circuitOpenUntil: 500 })
        const [due, later, finished] = [1, 2, 3].map(() => aDelivery({ webhookId: endpoint.id }))
        yield* repo.enqueue([later!], 9_000)
        yield* repo.enqueue([due!, finished!], 1_500)
        // A claimed attempt is still pending; a finished one is not.
        expect(ids(yield* repo.claimDue(1_500, 10, LEASE, "t"))).toEqual(ids([due!, finished!]))
        const done = { ...finished!, status: "succeeded" as const, responseStatus: 200 }
        expect(yield* repo.complete(done, "t", null)).toBe(true)
        expect(yield* repo.queueHealth(2_000)).toEqual({ pending: 2, oldestDueAt: 1_500, circuitsOpen: 1 })
        expect(yield* repo.queueHealth(6_000)).toEqual({ pending: 2, oldestDueAt: 1_500, circuitsOpen: 0 })
      }))

    test("advancing makes held attempts due sooner, never later, and leaves finished ones alone", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const [held, soon, finished] = [1, 2, 3].map(() => aDelivery({ webhookId: endpoint.id }))
        yield* repo.enqueue([held!], 10_000)
        yield* repo.enqueue([soon!], 1_000)
        yield* repo.enqueue([finished!], 0)
        expect(ids(yield* repo.claimDue(0, 10, LEASE, "t"))).toEqual([finished!.id])
        const done = { ...finished!, status: "succeeded" as const, responseStatus: 200 }
        expect(yield* repo.complete(done, "t", null)).toBe(true)
        yield* repo.advance([held!.id, soon!.id, finished!.id], 2_000)
        expect(yield* repo.claimDue(999, 10, LEASE, "u")).toEqual([])
        expect(ids(yield* repo.claimDue(1_000, 10, LEASE, "u"))).toEqual([soon!.id])
        expect(yield* repo.claimDue(1_999, 10, LEASE, "u")).toEqual([])
        expect(ids(yield* repo.claimDue(2_000, 10, LEASE, "u"))).toEqual([held!.id])
        expect(yield* repo.findInWebhook(endpoint.id, finished!.id)).toEqual(Option.some(done))
        expect(yield* repo.nextDueAt(2_000)).toEqual(Option.some(1_000 + LEASE))
      }))

    test("a claim is held until its lease ends, then another dispatcher may take it", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const delivery = aDelivery({ webhookId: endpoint.id })
        yield* repo.enqueue([delivery], 0)
        expect(ids(yield* repo.claimDue(0, 10, LEASE, "first"))).toEqual([delivery.id])
        expect(yield* repo.claimDue(LEASE - 1, 10, LEASE, "second")).toEqual([])
        expect(yield* repo.nextDueAt(LEASE - 1)).toEqual(Option.some(LEASE))
        expect(ids(yield* repo.claimDue(LEASE, 10, LEASE, "second"))).toEqual([delivery.id])
        // The first dispatcher's late result is refused: the claim is the second's now.
        const late = { ...delivery, status: "succeeded" as const, responseStatus: 200 }
        expect(yield* repo.complete(late, "first", null)).toBe(false)
        // Still pending: the log shows when it was due.
        expect(yield* repo.findInWebhook(endpoint.id, delivery.id)).toEqual(
          Option.some({ ...delivery, nextRetryAt: 0 })
        )
        expect(yield* repo.complete(late, "second", null)).toBe(true)
        expect(yield* repo.findInWebhook(endpoint.id, delivery.id)).toEqual(Option.some(late))
        // Finished: never claimed again.
        expect(yield* repo.claimDue(10 * LEASE, 10, LEASE, "third")).toEqual([])
        expect(yield* repo.nextDueAt(10 * LEASE)).toEqual(Option.none())
      }))

    test("completing queues the next attempt at its due time", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const delivery = aDelivery({ webhookId: endpoint.id })
        yield* repo.enqueue([delivery], 0)
        yield* repo.claimDue(0, 10, LEASE, "t")
        const failed = { ...delivery, status: "failed" as const, responseStatus: 500, nextRetryAt: 5_000 }
        const retry = aDelivery({
          webhookId: endpoint.id,
          eventId: delivery.eventId,
          attempt: 2,
          trigger: "retry",
          createdAt: 10
        })
        expect(yield* repo.complete(failed, "t", { delivery: retry, dueAt: 5_000 })).toBe(true)
        expect(yield* repo.claimDue(4_999, 10, LEASE, "t")).toEqual([])
        expect(yield* repo.claimDue(5_000, 10, LEASE, "t")).toEqual([retry])
        expect(yield* repo.attemptsOf(endpoint.id, delivery.eventId)).toEqual([failed, retry])
      }))

    test("released claims are due again at once", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const batch = [aDelivery({ webhookId: endpoint.id }), aDelivery({ webhookId: endpoint.id })]
        yield* repo.enqueue(batch, 0)
        yield* repo.claimDue(0, 10, LEASE, "stopping")
        yield* repo.release([batch[0]!.id], "someone-else")
        expect(yield* repo.claimDue(1, 10, LEASE, "other")).toEqual([])
        yield* repo.release(
          batch.map((d) => d.id),
          "stopping"
        )
        expect(ids(yield* repo.claimDue(1, 10, LEASE, "other"))).toEqual(ids(batch))
      }))

    test("concurrent claims never hand one attempt to two dispatchers", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        // Ten endpoints of four attempts each: every attempt is within its endpoint's limit.
        const endpoints = yield* Effect.all(Array.from({ length: 10 }, () => givenEndpoint()))
        const batch = endpoints.flatMap((endpoint) =>
          Array.from({ length: 4 }, () => aDelivery({ webhookId: endpoint.id }))
        )
        yield* repo.enqueue(batch, 0)
        // Rounds of eight concurrent claims until one finds nothing: a claim may skip the
        // endpoints another claim holds at that moment, and takes them in a later round.
        const claimed: Array<string> = []
        for (let round = 0; round < 20; round++) {
          const claims = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => repo.claimDue(0, 7, LEASE, `d${round}-${i}`)),
            { concurrency: "unbounded" }
          )
          if (claims.flat().length === 0) break
          claimed.push(...claims.flat().map((d) => d.id))
        }
        expect(new Set(claimed).size).toBe(claimed.length)
        expect(claimed.length).toBe(40)
      }))

    test("attempts queued in a unit of work that fails are not kept", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const uow = yield* UnitOfWork
        const endpoint = yield* givenEndpoint()
        const delivery = aDelivery({ webhookId: endpoint.id })
        const failed = yield* Effect.either(
          uow.transaction(
            Effect.zipRight(
              repo.enqueue([delivery], 0),
              Effect.fail(new StorageUnavailable({ operation: "x" }))
            )
          )
        )
        expect(Either.isLeft(failed)).toBe(true)
        expect(yield* repo.claimDue(0, 10, LEASE, "t")).toEqual([])
        expect(yield* repo.findInWebhook(endpoint.id, delivery.id)).toEqual(Option.none())
      }))

    test("finds an attempt only under its own endpoint; lists newest first by keyset", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const other = yield* givenEndpoint()
        // Two share a timestamp: the id breaks the tie.
        const rows = [1_000, 3_000, 2_000, 2_000, 5_000].map((createdAt) =>
          aDelivery({ webhookId: endpoint.id, createdAt, status: "succeeded", responseStatus: 200 })
        )
        for (const row of rows) yield* repo.insertFinished(row)
        const theirs = aDelivery({ webhookId: other.id })
        yield* repo.insertFinished(theirs)
        expect(yield* repo.findInWebhook(endpoint.id, theirs.id)).toEqual(Option.none())
        expect(yield* repo.findInWebhook(other.id, theirs.id)).toEqual(Option.some(theirs))

        const expected = [...rows]
          .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
          .map((d) => d.id)
        const first = yield* repo.list(endpoint.id, { limit: 3, after: null })
        expect(first.hasMore).toBe(true)
        const last = first.items[2]!
        const second = yield* repo.list(endpoint.id, {
          limit: 3,
          after: { createdAt: last.createdAt, id: last.id }
        })
        expect(second.hasMore).toBe(false)
        expect([...first.items, ...second.items].map((d) => d.id)).toEqual(expected)
      }))

    test("active endpoints of a workspace: paused, disabled and other workspaces' are left out", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const workspaceId = uniqueId("ws")
        const active = yield* givenEndpoint({ workspaceId: makeWorkspaceId(workspaceId) })
        yield* givenEndpoint({ workspaceId: makeWorkspaceId(workspaceId), status: "paused" })
        yield* givenEndpoint({ workspaceId: makeWorkspaceId(workspaceId), status: "disabled" })
        yield* givenEndpoint()
        expect((yield* repo.activeEndpoints(makeWorkspaceId(workspaceId))).map((e) => e.id)).toEqual([
          active.id
        ])
        expect(yield* repo.endpoint(active.id)).toEqual(Option.some(active))
        expect(yield* repo.endpoint(makeWebhookId(uniqueId("wh")))).toEqual(Option.none())
      }))

    test("purges in batches the finished attempts and the events older than the bound, never a pending attempt nor its event", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const outbox = yield* EventOutbox
        const endpoint = yield* givenEndpoint()
        // Long before any other test's records (1970), so a shared database's other rows stay.
        const BOUND = 100_000
        const submission = submissionRecord(intakeBotRecord(endpoint.workspaceId))
        const event = (createdAt: number) => domainEventRecord(submission, { id: uniqueId("evt"), createdAt })
        const [old, oldPending, young] = [event(1_000), event(2_000), event(BOUND)]
        yield* outbox.append([old!, oldPending!, young!])
        const BATCH = 10
        // Two and a half batches of old finished attempts.
        for (let i = 0; i < 25; i++)
          yield* repo.insertFinished(
            aDelivery({
              webhookId: endpoint.id,
              eventId: i % 2 === 0 ? old!.id : oldPending!.id,
              status: "failed",
              createdAt: 1_000 + i
            })
          )
        const queued = aDelivery({ webhookId: endpoint.id, eventId: oldPending!.id, createdAt: 3_000 })
        const leased = aDelivery({ webhookId: endpoint.id, eventId: oldPending!.id, createdAt: 3_001 })
        yield* repo.enqueue([queued, leased], 200_000)
        yield* repo.advance([leased.id], 0)
        expect(ids(yield* repo.claimDue(0, 10, LEASE, "t"))).toEqual([leased.id])
        const kept = aDelivery({
          webhookId: endpoint.id,
          eventId: young!.id,
          status: "succeeded",
          createdAt: BOUND
        })
        yield* repo.insertFinished(kept)

        const purged = yield* repo.purgeOlderThan(BOUND, BATCH)
        expect(purged.deliveries).toBe(25)
        // A shared database may hold other tests' old events: at least this one went.
        expect(purged.events).toBeGreaterThanOrEqual(1)
        const left = yield* repo.list(endpoint.id, { limit: 100, after: null })
        expect(ids(left.items)).toEqual(ids([queued, leased, kept]))
        expect(yield* outbox.findById(old!.id)).toEqual(Option.none())
        expect(Option.isSome(yield* outbox.findById(oldPending!.id))).toBe(true)
        expect(Option.isSome(yield* outbox.findById(young!.id))).toBe(true)
        // The leased attempt is still its dispatcher's to complete.
        expect(yield* repo.complete({ ...leased, status: "succeeded" }, "t", null)).toBe(true)
        expect((yield* repo.purgeOlderThan(BOUND, BATCH)).deliveries).toBe(1)
        expect(yield* repo.purgeOlderThan(BOUND, BATCH)).toEqual({ deliveries: 0, events: 0 })
      }))

    test("records outcomes: the failure streak, a success ending it, disabling by time and by 410", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const fail = (at: number, responseStatus: number | null = 500) =>
          Effect.map(
            repo.recordOutcome(endpoint.id, { ok: false, responseStatus, at }, 5 * DAY),
            (recorded) => Option.getOrThrow(recorded).endpoint
          )
        expect(yield* fail(1_000)).toMatchObject({
          lastDeliveryAt: 1_000,
          lastDeliveryOk: false,
          consecutiveFails: 1,
          failingSince: 1_000,
          status: "active"
        })
        expect(yield* fail(2_000, null)).toMatchObject({ consecutiveFails: 2, failingSince: 1_000 })
        const ok = yield* repo.recordOutcome(
          endpoint.id,
          { ok: true, responseStatus: 204, at: 3_000 },
          5 * DAY
        )
        expect(Option.getOrThrow(ok).previousStatus).toBe("active")
        expect(Option.getOrThrow(ok).endpoint).toMatchObject({
          lastDeliveryAt: 3_000,
          lastDeliveryOk: true,
          consecutiveFails: 0,
          failingSince: null,
          status: "active"
        })
        yield* fail(10_000)
        expect((yield* fail(10_000 + 5 * DAY - 1)).status).toBe("active")
        expect(yield* fail(10_000 + 5 * DAY)).toMatchObject({ status: "disabled", consecutiveFails: 3 })
        // The status before tells which outcome disabled it: this one, not a later one.
        const later = yield* repo.recordOutcome(
          endpoint.id,
          { ok: false, responseStatus: 500, at: 6 * DAY },
          5 * DAY
        )
        expect(Option.getOrThrow(later).previousStatus).toBe("disabled")
        const stored = yield* (yield* WebhookRepository).findInWorkspace(endpoint.workspaceId, endpoint.id)
        expect(Option.getOrThrow(stored).status).toBe("disabled")

        const gone = yield* givenEndpoint()
        const after410 = yield* repo.recordOutcome(
          gone.id,
          { ok: false, responseStatus: 410, at: 1 },
          5 * DAY
        )
        expect(Option.getOrThrow(after410)).toMatchObject({
          previousStatus: "active",
          endpoint: { status: "disabled", consecutiveFails: 1 }
        })
        expect(
          yield* repo.recordOutcome(
            makeWebhookId(uniqueId("wh")),
            { ok: true, responseStatus: 200, at: 1 },
            5 * DAY
          )
        ).toEqual(Option.none())
      }))
    // ------------------------------------------------------------ isolation (docs/webhooks.md)

    const policy: DeliveryIsolation.IsolationPolicy = {
      maxInFlight: 3,
      circuitFailures: 3,
      cooldownMs: 10_000,
      maxCooldownMs: 40_000
    }

    test("never more of one endpoint in flight than its limit, across concurrent claims; leases count", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const busy = yield* givenEndpoint()
        const quiet = yield* givenEndpoint()
        const backlog = Array.from({ length: 20 }, () => aDelivery({ webhookId: busy.id }))
        const single = aDelivery({ webhookId: quiet.id })
        yield* repo.enqueue(backlog, 0)
        yield* repo.enqueue([single], 5)
        const claims = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => repo.claimDue(10, 5, LEASE, `d${i}`, policy)),
          { concurrency: "unbounded" }
        )
        const claimed = claims.flat()
        expect(new Set(claimed.map((d) => d.id)).size).toBe(claimed.length)
        expect(claimed.filter((d) => d.webhookId === busy.id)).toHaveLength(3)
        expect(claimed.filter((d) => d.webhookId === quiet.id)).toEqual([single])
        // Full: nothing more until one finishes, and the dispatcher need not wake before a lease ends.
        expect(yield* repo.claimDue(20, 10, LEASE, "late", policy)).toEqual([])
        expect(yield* repo.nextDueAt(20, policy)).toEqual(Option.some(10 + LEASE))
        const done = claimed.find((d) => d.webhookId === busy.id)!
        const owner = claims.findIndex((claim) => claim.some((d) => d.id === done.id))
        expect(yield* repo.complete({ ...done, status: "succeeded" }, `d${owner}`, null)).toBe(true)
        expect(yield* repo.claimDue(30, 10, LEASE, "late", policy)).toHaveLength(1)
        // A lease that ended is no longer in flight: its attempt and the free slots go again.
        expect(yield* repo.claimDue(10 + LEASE, 10, LEASE, "after", policy)).toHaveLength(3)
      }))

    test("claims take each endpoint's earliest due in turn, workspaces first, so a backlog starves no one", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const workspaceId = uniqueId("ws")
        const big = yield* givenEndpoint({ workspaceId: makeWorkspaceId(workspaceId) })
        const sibling = yield* givenEndpoint({ workspaceId: makeWorkspaceId(workspaceId) })
        const elsewhere = yield* givenEndpoint()
        const backlog = Array.from({ length: 10 }, () => aDelivery({ webhookId: big.id }))
        yield* Effect.forEach(backlog, (d, i) => repo.enqueue([d], i), { discard: true })
        const siblings = [aDelivery({ webhookId: sibling.id }), aDelivery({ webhookId: sibling.id })]
        yield* repo.enqueue(siblings, 100)
        const other = aDelivery({ webhookId: elsewhere.id })
        yield* repo.enqueue([other], 200)
        const wide = { ...policy, maxInFlight: 10 }
        const first = yield* repo.claimDue(1_000, 4, LEASE, "t", wide)
        // The big endpoint's workspace waited longest: its turn, the other workspace's, then
        // its sibling endpoint's (workspaces alternate; endpoints alternate within one).
        expect(first.map((d) => d.id)).toEqual([backlog[0]!.id, other.id, siblings[0]!.id, backlog[1]!.id])
        // Within a turn, the endpoint waiting longest goes first.
        const second = yield* repo.claimDue(1_000, 3, LEASE, "t", wide)
        expect(second.map((d) => d.id)).toEqual([backlog[2]!.id, siblings[1]!.id, backlog[3]!.id])
      }))

    test("an open circuit keeps the endpoint's attempts queued; half open lets one probe through", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const failing = yield* givenEndpoint({ consecutiveFails: 3, circuitOpenUntil: 5_000 })
        const healthy = yield* givenEndpoint()
        const queued = Array.from({ length: 4 }, () => aDelivery({ webhookId: failing.id }))
        yield* repo.enqueue(queued, 0)
        const fine = aDelivery({ webhookId: healthy.id })
        yield* repo.enqueue([fine], 0)
        expect(yield* repo.claimDue(1_000, 10, LEASE, "t", policy)).toEqual([fine])
        // Not a spin: the next look is when the circuit half opens.
        expect(yield* repo.nextDueAt(1_000, policy)).toEqual(Option.some(5_000))
        const probe = yield* repo.claimDue(5_000, 10, LEASE, "t", policy)
        expect(probe.map((d) => d.id)).toEqual([queued[0]!.id])
        expect(yield* repo.claimDue(5_001, 10, LEASE, "t", policy)).toEqual([])
        // The probe succeeds: the circuit closes, the rest flows (up to the limit).
        const closed = yield* repo.recordOutcome(
          failing.id,
          { ok: true, responseStatus: 200, at: 5_100, durationMs: 10 },
          5 * DAY,
          policy
        )
        expect(Option.getOrThrow(closed).endpoint.circuitOpenUntil).toBeNull()
        expect(yield* repo.complete({ ...probe[0]!, status: "succeeded" }, "t", null)).toBe(true)
        const rest = yield* repo.claimDue(5_200, 10, LEASE, "t", policy)
        expect(rest.map((d) => d.id)).toEqual(queued.slice(1).map((d) => d.id))
        // Nothing was dropped on the way.
        for (const d of queued.slice(1))
          expect(Option.map(yield* repo.findInWebhook(failing.id, d.id), (found) => found.status)).toEqual(
            Option.some("pending")
          )
      }))

    test("failures open the circuit from the attempt's end, for as long as the endpoint has failed; a success closes it", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const fail = (at: number) =>
          Effect.map(
            repo.recordOutcome(
              endpoint.id,
              { ok: false, responseStatus: null, at, durationMs: 10_000 },
              5 * DAY,
              policy
            ),
            (e) => Option.getOrThrow(e).endpoint.circuitOpenUntil
          )
        expect(yield* fail(0)).toBeNull()
        expect(yield* fail(1_000)).toBeNull()
        // Failing since 0, the third failure ends at 12 s: open for 12 s (at least 10 s).
        expect(yield* fail(2_000)).toBe(12_000 + 12_000)
        expect(yield* fail(30_000)).toBe(40_000 + 40_000)
        // At most 40 s.
        expect(yield* fail(90_000)).toBe(100_000 + 40_000)
        const stored = yield* (yield* WebhookRepository).findInWorkspace(endpoint.workspaceId, endpoint.id)
        expect(Option.getOrThrow(stored).circuitOpenUntil).toBe(140_000)
        const ok = yield* repo.recordOutcome(
          endpoint.id,
          { ok: true, responseStatus: 204, at: 200_000 },
          5 * DAY,
          policy
        )
        expect(Option.getOrThrow(ok).endpoint).toMatchObject({ circuitOpenUntil: null, consecutiveFails: 0 })
      }))

    test("a rate limit spaces the endpoint's sends across claims", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const paced = yield* givenEndpoint({ rateLimit: 4 })
        const queued = Array.from({ length: 3 }, () => aDelivery({ webhookId: paced.id }))
        yield* repo.enqueue(queued, 0)
        expect(yield* repo.claimDue(1_000, 10, LEASE, "a", policy)).toEqual([queued[0]])
        expect(yield* repo.claimDue(1_100, 10, LEASE, "b", policy)).toEqual([])
        expect(yield* repo.nextDueAt(1_100, policy)).toEqual(Option.some(1_250))
        expect(yield* repo.claimDue(1_250, 10, LEASE, "b", policy)).toEqual([queued[1]])
        expect(yield* repo.claimDue(1_499, 10, LEASE, "c", policy)).toEqual([])
        expect(yield* repo.claimDue(1_500, 10, LEASE, "c", policy)).toEqual([queued[2]])
      }))
    test("a claim tells whether it left due attempts waiting, and when its leases run from", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const capped = yield* givenEndpoint()
        const queued = Array.from({ length: 3 }, () => aDelivery({ webhookId: capped.id }))
        yield* repo.enqueue(queued, 0)
        // Two in flight at most: one is left waiting behind the cap.
        const first = yield* repo.claim(1_000, 10, LEASE, "a", { ...policy, maxInFlight: 2 })
        expect(first.deliveries).toEqual(queued.slice(0, 2))
        expect(first.more).toBe(true)
        expect(first.claimedAt).toBe(1_000)
        // A store that reads what sending needs with the claim reads what dispatchSources reads.
        if (first.sources !== undefined)
          expect(first.sources).toEqual(yield* repo.dispatchSources(first.deliveries))
        // The claim's limit leaves one waiting too; then nothing is left.
        const other = yield* givenEndpoint()
        const more = Array.from({ length: 2 }, () => aDelivery({ webhookId: other.id }))
        yield* repo.enqueue(more, 0)
        const limited = yield* repo.claim(1_000, 1, LEASE, "b", { ...policy, maxInFlight: 2 })
        expect(limited.deliveries).toHaveLength(1)
        expect(limited.more).toBe(true)
        const rest = yield* repo.claim(1_000, 10, LEASE, "c", policy)
        expect(rest.deliveries.map((d) => d.id).sort()).toEqual(
          [queued[2]!.id, ...more.slice(1).map((d) => d.id)].sort()
        )
        expect(rest.more).toBe(false)
      }))

    test("completeMany writes finished attempts, their retries and the endpoints' state together, or nothing and the claims it lost", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const uow = yield* UnitOfWork
        const endpoint = yield* givenEndpoint()
        const [a, b] = [1, 2].map(() => aDelivery({ webhookId: endpoint.id }))
        yield* repo.enqueue([a!, b!], 0)
        expect(ids(yield* repo.claimDue(0, 10, LEASE, "mine"))).toEqual(ids([a!, b!]))
        const doneA = { ...a!, status: "succeeded" as const, responseStatus: 204, sentAt: 10, durationMs: 3 }
        const failedB = { ...b!, status: "failed" as const, responseStatus: 500, nextRetryAt: 5_000 }
        const retry = aDelivery({ webhookId: endpoint.id, eventId: b!.eventId, attempt: 2, trigger: "retry" })
        const batch = [
          { finished: doneA, next: null },
          { finished: failedB, next: { delivery: retry, dueAt: 5_000 } }
        ]
        const failing = {
          ...endpoint,
          description: "not written by completeMany",
          lastDeliveryAt: 10,
          lastDeliveryOk: false,
          consecutiveFails: 1,
          failingSince: 10,
          updatedAt: 10
        }
        const stored = () =>
          Effect.map(
            Effect.flatMap(WebhookRepository, (webhooks) =>
              webhooks.findInWorkspace(endpoint.workspaceId, endpoint.id)
            ),
            Option.getOrThrow
          )
        // Another token's batch: every claim is lost, and nothing of it is written, the
        // endpoint's state included, even as its unit of work's last statement (with the commit).
        const lost = yield* uow.transaction(uow.commitWith(repo.completeMany(batch, "theirs", [failing])))
        expect([...lost].sort()).toEqual(ids([a!, b!]))
        expect(yield* repo.findInWebhook(endpoint.id, retry.id)).toEqual(Option.none())
        expect(yield* stored()).toEqual(endpoint)
        // One of the two lost (a claim that is not this token's): still nothing written.
        expect(
          yield* uow.transaction(
            repo.completeMany(
              [...batch, { finished: aDelivery({ webhookId: endpoint.id }), next: null }],
              "mine",
              [failing]
            )
          )
        ).toHaveLength(1)
        expect(yield* repo.findInWebhook(endpoint.id, retry.id)).toEqual(Option.none())
        expect(yield* stored()).toEqual(endpoint)
        expect(yield* uow.transaction(uow.commitWith(repo.completeMany(batch, "mine", [failing])))).toEqual(
          []
        )
        expect(yield* repo.findInWebhook(endpoint.id, a!.id)).toEqual(Option.some(doneA))
        expect(yield* repo.findInWebhook(endpoint.id, b!.id)).toEqual(Option.some(failedB))
        expect(yield* repo.findInWebhook(endpoint.id, retry.id)).toEqual(
          Option.some({ ...retry, nextRetryAt: 5_000 })
        )
        // Its delivery state only: the description is not completeMany's to write.
        expect(yield* stored()).toEqual({ ...failing, description: endpoint.description })
        expect(ids(yield* repo.claimDue(5_000, 10, LEASE, "next"))).toEqual([retry.id])
      }))

    test("lockEndpoints reads the existing endpoints in id order", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const uow = yield* UnitOfWork
        const [x, y] = [yield* givenEndpoint(), yield* givenEndpoint()]
        const locked = yield* uow.transaction(repo.lockEndpoints([y.id, makeWebhookId(uniqueId("wh")), x.id]))
        expect(locked.map((e) => e.id)).toEqual([x.id, y.id].sort())
        expect(locked.find((e) => e.id === x.id)).toEqual(x)
      }))

    test("the rate limit's send gate lets one send start per spacing, and says when the next may", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const paced = yield* givenEndpoint({ rateLimit: 2 })
        expect(yield* repo.reserveSend(paced.id, 10_000, 500)).toBeNull()
        expect(yield* repo.reserveSend(paced.id, 10_200, 500)).toBe(10_500)
        expect(yield* repo.reserveSend(paced.id, 10_500, 500)).toBeNull()
        expect(yield* repo.reserveSend(paced.id, 10_999, 500)).toBe(11_000)
        // Each endpoint has its own gate.
        expect(yield* repo.reserveSend((yield* givenEndpoint({ rateLimit: 2 })).id, 10_200, 500)).toBeNull()
      }))
  })
}
