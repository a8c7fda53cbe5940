/**
 * What one POST /v1/intake-bots/:id/submissions costs the database below the HTTP edge:
 * the statements that Idempotency.run around Submissions.create sends, as the server runs
 * them, counted at the drivers (docs/performance.md, "Round trips of a create"). At most 9 in
 * the common case (no replay; the contact new or known), on PostgreSQL and on PGlite; 2 on
 * PostgreSQL once the connection has prepared the create's statements, with a key or without.
 */
import { expect, layer } from "@effect/vitest"
import {
  Idempotency,
  IntakeBots,
  makeIntakeBotId,
  Provisioning,
  type SubmissionDetail,
  Submissions,
  UseCasesLive,
  WebhookRepository,
  WebhookSettings
} from "@intake/domain"
import { aWebhookEndpoint, newIntakeBot, validSubmissionData } from "@intake/testing"
import { Duration, Effect, Exit, Layer } from "effect"
import { layerPglite } from "../src/pglite-client.js"
import type { SqlDatabase } from "../src/runtime.js"
import { instancePortsOn, PostgresTestDatabase, testServerUrl } from "../src/testing.js"
import { statementsOf } from "./statements.js"
import { describePostgres } from "./support.js"

const MAX_ROUND_TRIPS = 9

const runtimeOn = <E>(database: Layer.Layer<SqlDatabase, E>) =>
  UseCasesLive.pipe(
    Layer.provideMerge(instancePortsOn(database)),
    Layer.provide(WebhookSettings.layer({ allowPrivateNetworks: false }))
  )

const scene = Effect.gen(function* () {
  const provisioning = yield* Provisioning
  const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "pro" })
  const issued = yield* provisioning.createApiKey(workspace.id, { scopes: ["write:intake-bots"] })
  const bot = yield* (yield* IntakeBots).create(workspace.id, newIntakeBot())
  return { workspaceId: workspace.id, apiKeyId: issued.apiKey.id, botId: bot.id }
})

type Scene = Effect.Effect.Success<typeof scene>

/** The statements of one create, as the server runs it: with an Idempotency-Key unless `key` is null. */
const measuredCreate = (
  { workspaceId, apiKeyId, botId }: Scene,
  data: Record<string, unknown>,
  key: string | null,
  /** Its failure stored for a retry to replay, as the server stores a 404. */
  storedFailure?: { readonly status: number; readonly body: unknown }
) =>
  Effect.gen(function* () {
    const idempotency = yield* Idempotency
    const submissions = yield* Submissions
    const create = submissions.create(workspaceId, botId, { data })
    const work =
      key === null
        ? Effect.asVoid(create)
        : Effect.asVoid(
            idempotency.run(
              {
                apiKeyId,
                key,
                fingerprint: idempotency.fingerprint("POST", `/v1/intake-bots/${botId}/submissions`, { data })
              },
              create,
              {
                onSuccess: (submission: SubmissionDetail) => ({ status: 201, body: { id: submission.id } }),
                onFailure: () => storedFailure
              }
            )
          )
    const context = yield* Effect.context<Idempotency | Submissions>()
    const { value, statements, unprepared } = yield* Effect.promise(() =>
      statementsOf(() => Effect.runPromiseExit(Effect.provide(work, context)))
    )
    // Only a failure stored for replay is expected, and answered as the failure it is.
    if (Exit.isFailure(value) && storedFailure === undefined) return yield* Effect.failCause(value.cause)
    return Object.assign(statements, { unprepared, failed: Exit.isFailure(value) })
  })

/** `prepared`: every statement is a named prepared statement, BEGIN included (PostgreSQL; docs/performance.md). */
const roundTripSuite = <E>(store: string, database: Layer.Layer<SqlDatabase, E>, prepared: boolean) =>
  layer(runtimeOn(database), { timeout: Duration.seconds(120) })(
    `round trips of a create on ${store}`,
    (it) => {
      it.effect(
        `an idempotent create with a new or a known contact sends at most ${MAX_ROUND_TRIPS} statements`,
        () =>
          Effect.gen(function* () {
            const given = yield* scene
            const email = `ada-${given.botId}@example.com`
            const newContact = yield* measuredCreate(
              given,
              validSubmissionData({ email }),
              `k-${given.botId}-1`
            )
            const knownContact = yield* measuredCreate(
              given,
              validSubmissionData({ email }),
              `k-${given.botId}-2`
            )
            for (const statements of [newContact, knownContact]) {
              expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(MAX_ROUND_TRIPS)
              expect(statements.filter((statement) => /SAVEPOINT/i.test(statement))).toEqual([])
              // On PostgreSQL, BEGIN goes with the first statement once the connection has it prepared.
              expect(statements[0]).toMatch(prepared ? /^BEGIN( \+ |$)/ : /^BEGIN$/)
              if (prepared) {
                // The last statement, the submission within the quota, carries the COMMIT (and
                // the statements deferred to it).
                expect(statements.at(-1)).toMatch(
                  /^(.* \+ )?WITH inserted AS \( ?INSERT INTO submissions .* \+ COMMIT$/
                )
                expect(statements.filter((statement) => statement === "COMMIT")).toEqual([])
                expect(statements.unprepared).toEqual([])
              } else expect(statements.at(-1)).toBe("COMMIT")
            }
            if (prepared) {
              // Once its statements are prepared on the connection (the pool hands the last
              // one back), BEGIN and the claim go with the bot, and the contact with the
              // events, and the stored response, with the submission and the COMMIT.
              const again = yield* measuredCreate(given, validSubmissionData({ email }), `k-${given.botId}-4`)
              expect(again, again.join("\n")).toHaveLength(2)
              expect(again[0]).toMatch(
                /^BEGIN \+ SELECT WHERE CASE WHEN pg_try_advisory_xact_lock.* \+ SELECT b\.\*/
              )
              expect(again.at(-1)).toMatch(
                /^WITH contact AS MATERIALIZED .* \+ WITH stored AS \( INSERT INTO idempotency_records .* \+ WITH inserted AS \( ?INSERT INTO submissions .* \+ COMMIT$/
              )
            }
          })
      )

      it.effect("a retry that replays, and a failure stored for a retry, stay within the bound", () =>
        Effect.gen(function* () {
          const given = yield* scene
          const data = validSubmissionData()
          yield* measuredCreate(given, data, `k-${given.botId}-first`)
          const replayed = yield* measuredCreate(given, data, `k-${given.botId}-first`)
          const notFound = { status: 404, body: { code: "resource_not_found" } }
          const missingBot = { ...given, botId: makeIntakeBotId("bot_missing") }
          const failed = yield* measuredCreate(missingBot, data, `k-${given.botId}-missing`, notFound)
          expect(failed.failed).toBe(true)
          for (const statements of [replayed, failed]) {
            expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(MAX_ROUND_TRIPS)
          }
          if (prepared) {
            // The claim of a fresh key fails with the bot's read; rolled back, the key is
            // claimed again by reading its record, which replays.
            expect([...replayed], replayed.join("\n")).toEqual([
              expect.stringMatching(
                /^BEGIN \+ SELECT WHERE CASE WHEN pg_try_advisory_xact_lock.* \+ SELECT b\.\*/
              ),
              "ROLLBACK",
              expect.stringMatching(/^BEGIN \+ SELECT pg_try_advisory_xact_lock/),
              "COMMIT"
            ])
            // The 404 rolls the create's unit of work back; a second one claims the key and
            // stores the answer, which goes with its COMMIT.
            expect([...failed], failed.join("\n")).toEqual([
              expect.stringMatching(
                /^BEGIN \+ SELECT WHERE CASE WHEN pg_try_advisory_xact_lock.* \+ SELECT b\.\*/
              ),
              "ROLLBACK",
              expect.stringMatching(/^BEGIN \+ SELECT pg_try_advisory_xact_lock/),
              expect.stringMatching(/^WITH stored AS \( INSERT INTO idempotency_records .* \+ COMMIT$/)
            ])
          }
        })
      )

      it.effect(
        "without a key, or with receivers to queue attempts for, a create stays within the bound",
        () =>
          Effect.gen(function* () {
            const given = yield* scene
            const plain = yield* measuredCreate(given, validSubmissionData(), null)
            expect(plain.length, plain.join("\n")).toBeLessThanOrEqual(MAX_ROUND_TRIPS - 2)
            expect(plain.at(-1)).toMatch(
              prepared
                ? /^(BEGIN \+ )?(WITH contact AS MATERIALIZED .* \+ )?WITH inserted AS \( ?INSERT INTO submissions .* \+ COMMIT$/
                : /^COMMIT$/
            )
            if (prepared) {
              // Prepared: the bot, then everything else in one write, BEGIN to COMMIT.
              const again = yield* measuredCreate(given, validSubmissionData(), null)
              expect(again, again.join("\n")).toHaveLength(2)
              expect(again.at(-1)).toMatch(
                /^BEGIN \+ WITH contact AS MATERIALIZED .* \+ WITH inserted AS \( ?INSERT INTO submissions .* \+ COMMIT$/
              )
            }
            yield* (yield* WebhookRepository).insertWithinCap(
              aWebhookEndpoint({
                workspaceId: given.workspaceId,
                events: ["submission.completed", "contact.created"]
              }),
              10
            )
            const queued = yield* measuredCreate(
              given,
              validSubmissionData({ email: `grace-${given.botId}@example.com` }),
              `k-${given.botId}-3`
            )
            // The attempts go with their events, in one statement; the dispatchers' wake-up is one more.
            expect(queued.length, queued.join("\n")).toBeLessThanOrEqual(MAX_ROUND_TRIPS)
            expect(queued.filter((statement) => statement.includes("pg_notify"))).toHaveLength(1)
          })
      )
    }
  )

roundTripSuite("PGlite", layerPglite({}), false)

describePostgres("on PostgreSQL", () => roundTripSuite("PostgreSQL", PostgresTestDatabase(), true))

/**
 * Behind a transaction-mode pooler (DATABASE_POOL_MODE=transaction, docs/deploy-postgres.md)
 * no statement is named, so none waits to be prepared: BEGIN and the deferred statements go
 * with the next one, each parsed in the same write, from the first create on.
 */
describePostgres("on PostgreSQL, statements unnamed", () =>
  layer(runtimeOn(PostgresTestDatabase(testServerUrl(), { poolMode: "transaction" })), {
    timeout: Duration.seconds(120)
  })("round trips of a create with the pool mode transaction", (it) => {
    it.effect("an idempotent create, and one without a key, take 2 round trips from the first", () =>
      Effect.gen(function* () {
        const given = yield* scene
        const keyed = yield* measuredCreate(given, validSubmissionData(), `k-${given.botId}-1`)
        expect(keyed, keyed.join("\n")).toHaveLength(2)
        expect(keyed[0]).toMatch(
          /^BEGIN \+ SELECT WHERE CASE WHEN pg_try_advisory_xact_lock.* \+ SELECT b\.\*/
        )
        expect(keyed.at(-1)).toMatch(
          /^WITH contact AS MATERIALIZED .* \+ WITH stored AS \( INSERT INTO idempotency_records .* \+ WITH inserted AS \( ?INSERT INTO submissions .* \+ COMMIT$/
        )
        const plain = yield* measuredCreate(given, validSubmissionData(), null)
        expect(plain, plain.join("\n")).toHaveLength(2)
        expect(plain.at(-1)).toMatch(/^BEGIN \+ WITH contact AS MATERIALIZED .* \+ COMMIT$/)
      })
    )
  })
)
