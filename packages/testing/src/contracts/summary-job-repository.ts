/**
 * The contract every SummaryJobRepository adapter keeps. Each test runs on a fresh layer
 * or an emptied queue (a claim sees every due job).
 */

import { describe, expect, it } from "@effect/vitest"
import {
  makeDeliveryId,
  makeIntakeBotId,
  makeSubmissionId,
  makeWorkspaceId,
  type SummaryJob,
  SummaryJobRepository,
  UnitOfWork
} from "@intake/domain"
import { Effect, Either, type Layer, Option } from "effect"
import { uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

type Ports = SummaryJobRepository | UnitOfWork

const LEASE = 60_000

export const aSummaryJob = (overrides: Partial<SummaryJob> = {}): SummaryJob => ({
  submissionId: makeSubmissionId(uniqueId("sub")),
  workspaceId: makeWorkspaceId(uniqueId("ws")),
  intakeBotId: makeIntakeBotId(uniqueId("bot")),
  attempts: 0,
  heldDeliveryIds: [makeDeliveryId(uniqueId("dlv")), makeDeliveryId(uniqueId("dlv"))],
  createdAt: 1_000,
  ...overrides
})

export const summaryJobRepositoryContract = (name: string, theLayer: Layer.Layer<Ports>): void => {
  describe(`SummaryJobRepository contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, Ports>) =>
      it.effect(title, () => Effect.provide(body(), checkedStores(theLayer)))

    const ids = (jobs: ReadonlyArray<SummaryJob>) => jobs.map((job) => job.submissionId)

    test("claims due jobs earliest first, as queued, up to the limit; holds them for the lease", () =>
      Effect.gen(function* () {
        const repo = yield* SummaryJobRepository
        const [a, b, later] = [1, 2, 3].map(() => aSummaryJob())
        yield* repo.enqueue(b!, 2_000)
        yield* repo.enqueue(a!, 1_000)
        yield* repo.enqueue(later!, 9_000)
        expect(yield* repo.claimDue(999, 10, LEASE, "t1")).toEqual([])
        expect(yield* repo.claimDue(5_000, 1, LEASE, "t1")).toEqual([a])
        expect(ids(yield* repo.claimDue(5_000, 10, LEASE, "t2"))).toEqual([b!.submissionId])
        expect(yield* repo.nextDueAt()).toEqual(Option.some(9_000))
        // Leased: nobody else takes it until the lease ends.
        expect(ids(yield* repo.claimDue(9_000, 10, LEASE, "t3"))).toEqual([later!.submissionId])
        expect(yield* repo.claimDue(1_000 + LEASE - 1, 10, LEASE, "t4")).toEqual([])
        expect(ids(yield* repo.claimDue(5_000 + LEASE, 10, LEASE, "t4"))).toEqual([
          a!.submissionId,
          b!.submissionId
        ])
      }))

    test("only the claim's holder finishes or reschedules it; a retry counts the attempt and holds nothing", () =>
      Effect.gen(function* () {
        const repo = yield* SummaryJobRepository
        const job = aSummaryJob()
        yield* repo.enqueue(job, 0)
        yield* repo.claimDue(0, 10, LEASE, "first")
        expect(yield* repo.retryAt(job.submissionId, "someone else", 100)).toBe(false)
        expect(yield* repo.finish(job.submissionId, "someone else")).toBe(false)
        expect(yield* repo.retryAt(job.submissionId, "first", 30_000)).toBe(true)
        expect(yield* repo.claimDue(29_999, 10, LEASE, "second")).toEqual([])
        expect(yield* repo.claimDue(30_000, 10, LEASE, "second")).toEqual([
          { ...job, attempts: 1, heldDeliveryIds: [] }
        ])
        // The first holder's claim is gone with its retry.
        expect(yield* repo.finish(job.submissionId, "first")).toBe(false)
        expect(yield* repo.finish(job.submissionId, "second")).toBe(true)
        expect(yield* repo.claimDue(10 * LEASE, 10, LEASE, "third")).toEqual([])
        expect(yield* repo.nextDueAt()).toEqual(Option.none())
      }))

    test("released jobs are due again at once, for anyone", () =>
      Effect.gen(function* () {
        const repo = yield* SummaryJobRepository
        const job = aSummaryJob()
        yield* repo.enqueue(job, 0)
        yield* repo.claimDue(0, 10, LEASE, "stopping")
        yield* repo.release([job.submissionId], "not the holder")
        expect(yield* repo.claimDue(1, 10, LEASE, "other")).toEqual([])
        yield* repo.release([job.submissionId], "stopping")
        expect(ids(yield* repo.claimDue(1, 10, LEASE, "other"))).toEqual([job.submissionId])
      }))

    test("a job queued in a unit of work that fails is not queued", () =>
      Effect.gen(function* () {
        const repo = yield* SummaryJobRepository
        const job = aSummaryJob()
        const failed = yield* Effect.either(
          (yield* UnitOfWork).transaction(Effect.zipRight(repo.enqueue(job, 0), Effect.fail("rolled back")))
        )
        expect(Either.isLeft(failed)).toBe(true)
        expect(yield* repo.claimDue(0, 10, LEASE, "t")).toEqual([])
      }))
  })
}
