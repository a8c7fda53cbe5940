/**
 * The contract every DeliveryRepository adapter keeps: the queue (claims, leases, outcomes,
 * listing, purging) here, the endpoints' isolation in delivery-isolation.ts. Each test runs
 * on a fresh layer (the queue is global: a claim sees every due attempt), so an adapter's
 * layer should give a fresh store when built.
 */

import { describe, expect } from "@effect/vitest"
import {
  DeliveryRepository,
  EventOutbox,
  makeWebhookId,
  makeWorkspaceId,
  StorageUnavailable,
  UnitOfWork,
  WebhookRepository
} from "@intake/domain"
import { Effect, Either, type Layer, Option } from "effect"
import { aDelivery } from "../fixtures-deliveries.js"
import { domainEventRecord, intakeBotRecord, submissionRecord } from "../fixtures-submissions.js"
import { uniqueId } from "../records.js"
import { DAY, type DeliveryPorts, deliveryContractKit, LEASE } from "./delivery-contract-kit.js"
import { deliveryIsolationContract } from "./delivery-isolation.js"

export const deliveryRepositoryContract = (name: string, theLayer: Layer.Layer<DeliveryPorts>): void => {
  describe(`DeliveryRepository contract (${name})`, () => {
    const kit = deliveryContractKit(theLayer)
    const { test, givenEndpoint, ids } = kit

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

    test("the log's reads give each attempt the request id of the event it delivers, none when no request raised it", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const outbox = yield* EventOutbox
        const endpoint = yield* givenEndpoint()
        const submission = submissionRecord(intakeBotRecord(endpoint.workspaceId))
        const raised = domainEventRecord(submission, { requestId: "req_contract-create" })
        const notice = domainEventRecord(submission)
        yield* outbox.append([raised, notice])
        const pending = aDelivery({ webhookId: endpoint.id, eventId: raised.id, createdAt: 1_000 })
        const finished = aDelivery({
          webhookId: endpoint.id,
          eventId: raised.id,
          status: "failed",
          createdAt: 2_000
        })
        const unraised = aDelivery({
          webhookId: endpoint.id,
          eventId: notice.id,
          status: "succeeded",
          createdAt: 3_000
        })
        yield* repo.enqueue([pending], 5_000)
        yield* repo.insertFinished(finished)
        yield* repo.insertFinished(unraised)
        const listed = yield* repo.list(endpoint.id, { limit: 10, after: null })
        expect(listed.items.map((d) => [d.id, d.requestId])).toEqual([
          [unraised.id, undefined],
          [finished.id, "req_contract-create"],
          [pending.id, "req_contract-create"]
        ])
        expect(Option.map(yield* repo.findInWebhook(endpoint.id, finished.id), (d) => d.requestId)).toEqual(
          Option.some("req_contract-create")
        )
        expect(Option.map(yield* repo.findInWebhook(endpoint.id, unraised.id), (d) => d.requestId)).toEqual(
          Option.some(undefined)
        )
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

    deliveryIsolationContract(kit)
  })
}
