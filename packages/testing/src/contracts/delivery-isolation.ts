/**
 * The DeliveryRepository contract, the endpoints' isolation (docs/webhooks.md, Isolation):
 * in-flight limits, fair claims, circuits, rate limits, and the batch that writes outcomes
 * with the endpoints' state. Run within `deliveryRepositoryContract`.
 */
import { expect } from "@effect/vitest"
import {
  type DeliveryIsolation,
  DeliveryRepository,
  makeWebhookId,
  makeWorkspaceId,
  UnitOfWork,
  WebhookRepository
} from "@intake/domain"
import { Effect, Option } from "effect"
import { aDelivery } from "../fixtures-deliveries.js"
import { uniqueId } from "../records.js"
import { DAY, type DeliveryContractKit, LEASE } from "./delivery-contract-kit.js"

export const deliveryIsolationContract = ({ test, givenEndpoint, ids }: DeliveryContractKit): void => {
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
      const workspaceId = makeWorkspaceId(uniqueId("ws"))
      const big = yield* givenEndpoint({ workspaceId })
      const sibling = yield* givenEndpoint({ workspaceId })
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
      expect(yield* uow.transaction(uow.commitWith(repo.completeMany(batch, "mine", [failing])))).toEqual([])
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
}
