/**
 * The rules that must hold under concurrency, on the real PostgreSQL (many connections,
 * READ COMMITTED), through the real use cases.
 */

import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import {
  Idempotency,
  IdempotencyStore,
  IntakeBots,
  makeApiKeyId,
  Provisioning,
  type SubmissionDetail,
  Submissions,
  UnitOfWork,
  UseCasesLive,
  WebhookSettings,
  WorkspaceRepository
} from "@intake/domain"
import { newIntakeBot, validSubmissionData } from "@intake/testing"
import { Clock, Deferred, Duration, Effect, Either, Fiber, Layer, Option } from "effect"
import { PgReads } from "../src/driver/direct-pool.js"
import { instancePortsOn, PostgresTestDatabase } from "../src/testing.js"
import { describePostgres } from "./support.js"

const runtime = UseCasesLive.pipe(
  Layer.provideMerge(instancePortsOn(PostgresTestDatabase(undefined, { maxConnections: 20 }))),
  Layer.provide(WebhookSettings.layer({ allowPrivateNetworks: false }))
)

const scene = (monthlySubmissionQuota: number | null = null) =>
  Effect.gen(function* () {
    const provisioning = yield* Provisioning
    const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "pro" })
    const repository = yield* WorkspaceRepository
    const stored = Option.getOrThrow(yield* repository.findById(workspace.id))
    yield* repository.update({ ...stored, monthlySubmissionQuota })
    const issued = yield* provisioning.createApiKey(workspace.id, { scopes: ["write:intake-bots"] })
    const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
    return { workspace, apiKeyId: issued.apiKey.id, bot }
  })

const storedCount = (workspaceId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ n: string }>`SELECT count(*) AS n FROM submissions WHERE workspace_id = ${workspaceId}`,
      (rows) => Number(rows[0]!.n)
    )
  )

describePostgres("on PostgreSQL", () => {
  layer(runtime, { timeout: Duration.seconds(60) })("concurrency through the use cases", (it) => {
    it.effect("30 concurrent creates against a quota with 10 left create exactly 10", () =>
      Effect.gen(function* () {
        const { workspace, bot } = yield* scene(12)
        const submissions = yield* Submissions
        const create = submissions.create(workspace.id, bot.id, { data: validSubmissionData() })
        yield* create
        yield* create
        const outcomes = yield* Effect.all(
          Array.from({ length: 30 }, () => Effect.either(create)),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter(Either.isRight)).toHaveLength(10)
        const refusals = outcomes.filter(Either.isLeft).map((o) => o.left)
        expect(refusals).toHaveLength(20)
        for (const refusal of refusals) {
          expect(refusal._tag).toBe("PlanLimitExceeded")
          if (refusal._tag === "PlanLimitExceeded")
            expect(refusal.details).toEqual({ resource: "submissions", current: 12, max: 12 })
        }
        expect(yield* storedCount(workspace.id)).toBe(12)
        // A refused create leaves nothing: its events were written before the reservation
        // failed, and the COMMIT sent with the reservation was skipped (driver/committing-query.ts).
        const sql = yield* SqlClient.SqlClient
        const [events] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM domain_events
          WHERE workspace_id = ${workspace.id} AND type = 'submission.completed'`
        expect(Number(events!.n)).toBe(12)
      })
    )

    it.effect(
      "10 concurrent creates naming one new contact create it once, and all their events name it",
      () =>
        Effect.gen(function* () {
          const { workspace, bot } = yield* scene()
          const submissions = yield* Submissions
          yield* Effect.all(
            Array.from({ length: 10 }, (_, i) =>
              submissions.create(workspace.id, bot.id, {
                data: validSubmissionData({ email: i % 2 ? "lin@example.com" : "LIN@Example.com" })
              })
            ),
            { concurrency: "unbounded" }
          )
          const sql = yield* SqlClient.SqlClient
          const contacts = yield* sql<{
            id: string
          }>`SELECT id FROM contacts WHERE workspace_id = ${workspace.id}`
          expect(contacts).toHaveLength(1)
          const events = yield* sql<{ type: string; contact_id: string | null }>`SELECT type, contact_id
          FROM domain_events WHERE workspace_id = ${workspace.id}`
          expect(events.filter((event) => event.type === "contact.created")).toHaveLength(1)
          expect(events.filter((event) => event.type === "submission.completed")).toHaveLength(10)
          expect(new Set(events.map((event) => event.contact_id))).toEqual(new Set([contacts[0]!.id]))
        })
    )

    it.effect("20 concurrent identical requests with one Idempotency-Key create exactly one submission", () =>
      Effect.gen(function* () {
        const { workspace, apiKeyId, bot } = yield* scene()
        const idempotency = yield* Idempotency
        const submissions = yield* Submissions
        const data = validSubmissionData()
        const request = {
          apiKeyId,
          key: "retry-1",
          fingerprint: idempotency.fingerprint("POST", `/v1/intake-bots/${bot.id}/submissions`, { data })
        }
        const outcomes = yield* Effect.all(
          Array.from({ length: 20 }, () =>
            Effect.either(
              idempotency.run(request, submissions.create(workspace.id, bot.id, { data }), {
                onSuccess: (submission: SubmissionDetail) => ({ status: 201, body: { id: submission.id } }),
                onFailure: () => undefined
              })
            )
          ),
          { concurrency: "unbounded" }
        )
        expect(yield* storedCount(workspace.id)).toBe(1)
        const fresh = outcomes.filter((o) => Either.isRight(o) && o.right._tag === "Fresh")
        expect(fresh).toHaveLength(1)
        for (const outcome of outcomes)
          if (Either.isLeft(outcome)) expect(outcome.left._tag).toBe("IdempotencyConflict")
        // Once the first has committed, a retry replays its response.
        const retry = yield* idempotency.run(request, submissions.create(workspace.id, bot.id, { data }), {
          onSuccess: (submission: SubmissionDetail) => ({ status: 201, body: { id: submission.id } }),
          onFailure: () => undefined
        })
        expect(retry._tag).toBe("Replayed")
        expect(yield* storedCount(workspace.id)).toBe(1)
      })
    )

    it.effect(
      "a response stored for the key while a create runs, after its claim or before it: the create is undone and that response replays",
      () =>
        Effect.gen(function* () {
          const { workspace, apiKeyId, bot } = yield* scene()
          const idempotency = yield* Idempotency
          const submissions = yield* Submissions
          const { pool } = Option.getOrThrow(yield* Effect.serviceOption(PgReads))
          const data = validSubmissionData()
          const requestFor = (key: string) => ({
            apiKeyId,
            key,
            fingerprint: idempotency.fingerprint("POST", `/v1/intake-bots/${bot.id}/submissions`, { data })
          })
          const responses = {
            onSuccess: (submission: SubmissionDetail) => ({ status: 201, body: { id: submission.id } }),
            onFailure: () => undefined
          }
          // A create first, so that the connection has the create's statements prepared and the
          // stored response goes with the submission's statement (docs/performance.md).
          yield* idempotency.run(
            requestFor("warm"),
            submissions.create(workspace.id, bot.id, { data }),
            responses
          )
          const theirs = { status: 201, body: { id: "sub_theirs" } }
          /** Another request's response, committed while this one runs. */
          const storedMeanwhile = (key: string) =>
            Effect.promise(() =>
              pool.query(
                `INSERT INTO idempotency_records (api_key_id, key, fingerprint, response, created_at, expires_at)
                  VALUES ($1, $2, $3, $4::json, now(), now() + interval '1 day')`,
                [apiKeyId, key, requestFor(key).fingerprint, JSON.stringify(theirs)]
              )
            )
          const sql = yield* SqlClient.SqlClient
          // Stored after the claim ran (a statement inside the unit of work sends the claim,
          // which goes with the next one): the stored response finds it, the unit of work is
          // rolled back, and a second claim replays it.
          const afterClaim = yield* idempotency.run(
            requestFor("raced-after-claim"),
            Effect.zipRight(
              Effect.zipRight(sql`SELECT 1`, storedMeanwhile("raced-after-claim")),
              submissions.create(workspace.id, bot.id, { data })
            ),
            responses
          )
          expect(afterClaim).toEqual({ _tag: "Replayed", response: theirs })
          // Stored before the claim went (with the create's first statement): the claim fails
          // and the claim that reads the record replays it.
          const beforeClaim = yield* idempotency.run(
            requestFor("raced-before-claim"),
            Effect.zipRight(
              storedMeanwhile("raced-before-claim"),
              submissions.create(workspace.id, bot.id, { data })
            ),
            responses
          )
          expect(beforeClaim).toEqual({ _tag: "Replayed", response: theirs })
          expect(yield* storedCount(workspace.id)).toBe(1)
        })
    )

    it.effect("a claim of a key held by a unit of work in flight is a conflict at once, not a wait", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const scope = { apiKeyId: makeApiKeyId("key_inflight"), key: `k-${Date.now()}` }
        const claimed = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const holder = yield* Effect.fork(
          uow.transaction(
            Effect.gen(function* () {
              yield* store.claim(scope, "fp", Date.now())
              yield* Deferred.succeed(claimed, undefined)
              yield* Deferred.await(release)
            })
          )
        )
        yield* Deferred.await(claimed)
        const second = yield* uow
          .transaction(store.claim(scope, "fp", Date.now()))
          .pipe(Effect.flip, Effect.timeout(Duration.seconds(2)), Effect.withClock(Clock.make()))
        expect(second._tag).toBe("IdempotencyConflict")
        // A claim of a fresh key only fails at once too, and the claim that reads tells why.
        const secondFresh = yield* uow
          .transaction(
            Effect.zipRight(store.claimFresh(scope, "fp", Date.now()), store.claim(scope, "fp", Date.now()))
          )
          .pipe(Effect.flip, Effect.timeout(Duration.seconds(2)), Effect.withClock(Clock.make()))
        expect(secondFresh._tag).toBe("IdempotencyClaimNotFresh")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        // Released without a stored response (the holder completed nothing): fresh again.
        expect(yield* uow.transaction(store.claim(scope, "fp", Date.now()))).toEqual({ _tag: "Fresh" })
      })
    )
  })
})
