/**
 * Intake behind PgBouncer 1.18 in transaction pooling mode (docs/deploy-postgres.md,
 * PgBouncer): with `poolMode: "transaction"` every statement goes unnamed and the storage
 * contracts hold through a pool of two server sessions shared by every client; LISTEN goes
 * straight to PostgreSQL (`directUrl`). Without the setting, a named statement prepared on
 * one server session is bound on another, and fails.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { expect, it } from "@effect/vitest"
import { DeliveryWakeups } from "@intake/domain"
import { Cause, Context, Effect, Exit, Layer, Redacted } from "effect"
import { Client } from "pg"
import { PgDeliveryWakeups } from "../src/deliveries.js"
import { statement } from "../src/driver/statement.js"
import { statementSteps } from "../src/driver/statement-steps.js"
import { runMigrations } from "../src/migrator.js"
import { layerPostgres, type PoolMode } from "../src/pg-pool.js"
import { PgRepositoriesLive } from "../src/runtime.js"
import { freshDatabaseUrl } from "../src/testing.js"
import { type PgBouncer, startPgBouncer, withPgBouncer } from "../src/testing-pgbouncer.js"
import { deliveryContract, describePostgres, sharedLayer, storageContracts } from "./support.js"

class Setup extends Context.Tag("test/PgBouncerSetup")<
  Setup,
  { readonly bouncer: PgBouncer; readonly database: { readonly name: string; readonly url: string } }
>() {}

/** An exit's value, or its failure in words. */
const outcome = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isSuccess(exit) ? exit.value : `failed: ${Cause.pretty(exit.cause)}`

/** PgBouncer and a fresh database behind it, migrated straight on PostgreSQL, for the layer's life. */
const bouncerAndDatabase = Effect.gen(function* () {
  // Dropping the two timeouts a session-mode pool sends (pg-pool.ts), as an operator might
  // try first: then its named statements are what fails.
  const bouncer = yield* startPgBouncer({
    poolSize: 2,
    ignoreStartupParameters: ["lock_timeout", "idle_in_transaction_session_timeout"]
  })
  const database = yield* freshDatabaseUrl()
  yield* Effect.orDie(
    Effect.provide(runMigrations(), PgClient.layer({ url: Redacted.make(database.url), maxConnections: 1 }))
  )
  return { bouncer, database }
})

/** Intake's database layer through `bouncer`, as DATABASE_POOL_MODE and DATABASE_DIRECT_URL set it. */
const throughBouncer = (
  bouncer: PgBouncer,
  database: { readonly name: string; readonly url: string },
  poolMode: PoolMode,
  maxConnections = 10,
  directUrl = database.url
) =>
  layerPostgres({
    url: Redacted.make(bouncer.urlOf(database.name)),
    poolMode,
    directUrl: Redacted.make(directUrl),
    maxConnections
  })

withPgBouncer("PgBouncer", () =>
  describePostgres("through PgBouncer in transaction mode (pool of 2)", () => {
    const setup = sharedLayer(
      Layer.unwrapScoped(Effect.map(bouncerAndDatabase, (setup) => Layer.succeed(Setup, setup)))
    )
    const ports = sharedLayer(
      Layer.unwrapEffect(
        Effect.map(Setup, ({ bouncer, database }) =>
          PgRepositoriesLive.pipe(Layer.provideMerge(throughBouncer(bouncer, database, "transaction")))
        )
      ).pipe(Layer.provide(setup))
    )
    storageContracts("PostgreSQL through PgBouncer", ports)
    deliveryContract("PostgreSQL through PgBouncer", ports)

    /**
     * A statement of driver/statement-steps.ts (`step`) on a pool of one client, run twice: between the runs,
     * two other clients take the bouncer's two server sessions in turn so that the second run
     * lands on the session the first did not use. Answers each run's exit.
     */
    const runTwiceAcrossSessions = (poolMode: PoolMode) =>
      Effect.gen(function* () {
        const { bouncer, database } = yield* Setup
        const holder = () =>
          Effect.acquireRelease(
            Effect.promise(async () => {
              const client = new Client({ connectionString: bouncer.urlOf(database.name) })
              client.on("error", () => {})
              await client.connect()
              return client
            }),
            (client) => Effect.promise(() => client.end().catch(() => undefined))
          )
        const first = yield* holder()
        const second = yield* holder()
        const backend = (client: Client) =>
          Effect.promise(() =>
            client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid").then((r) => r.rows[0]!.pid)
          )
        return yield* Effect.gen(function* () {
          const { step } = yield* statementSteps
          const probe = step(
            "probe",
            statement`SELECT pg_backend_pid() AS pid, ${poolMode}::text AS mode`,
            (rows) => Exit.succeed(Number(rows[0]?.pid))
          )
          yield* Effect.promise(() => first.query("BEGIN"))
          const held = yield* backend(first) // the first session, held
          const one = yield* Effect.exit(probe) // on the other one
          yield* Effect.promise(() => second.query("BEGIN"))
          yield* backend(second) // the other one, held: the first is freed next
          yield* Effect.promise(() => first.query("COMMIT"))
          const two = yield* Effect.exit(probe) // on the first session
          yield* Effect.promise(() => second.query("COMMIT"))
          return { held, one, two }
        }).pipe(Effect.provide(throughBouncer(bouncer, database, poolMode, 1)))
      }).pipe(Effect.provide(setup), Effect.scoped)

    it.live(
      "unnamed statements (DATABASE_POOL_MODE=transaction) run on whichever server session is free",
      () =>
        Effect.gen(function* () {
          const { held, one, two } = yield* runTwiceAcrossSessions("transaction")
          expect(outcome(one)).not.toBe(held)
          expect(outcome(two)).toBe(held)
        })
    )

    it.live("without the setting, a named statement bound on another server session fails", () =>
      Effect.gen(function* () {
        const { held, one, two } = yield* runTwiceAcrossSessions("session")
        expect(typeof outcome(one)).toBe("number")
        expect(outcome(one)).not.toBe(held)
        expect(outcome(two)).toMatch(/prepared statement .* does not exist/)
      })
    )

    it.live("LISTEN goes straight to PostgreSQL: a NOTIFY through the bouncer wakes it up", () =>
      Effect.gen(function* () {
        const { bouncer, database } = yield* Setup
        // The direct URL names its sessions, so that PostgreSQL shows which one listens.
        const direct = new URL(database.url)
        direct.searchParams.set("application_name", "intake-direct")
        const { woken, listening } = yield* Effect.gen(function* () {
          const wakeups = yield* DeliveryWakeups
          // The listener may still be connecting: notified until one wake-up comes.
          const woken = yield* wakeups.next.pipe(
            Effect.raceFirst(Effect.forever(Effect.zipRight(wakeups.notify, Effect.sleep("100 millis")))),
            Effect.timeout("10 seconds"),
            Effect.as(true)
          )
          const listening = yield* Effect.promise(async () => {
            const client = new Client({ connectionString: database.url })
            await client.connect()
            try {
              const { rows } = await client.query<{ application_name: string }>(
                "SELECT application_name FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN %'",
                [database.name]
              )
              return rows.map((row) => row.application_name)
            } finally {
              await client.end()
            }
          })
          return { woken, listening }
        }).pipe(
          Effect.provide(
            PgDeliveryWakeups.pipe(
              Layer.provideMerge(throughBouncer(bouncer, database, "transaction", 10, direct.toString()))
            )
          )
        )
        expect(woken).toBe(true)
        expect(listening).toEqual(["intake-direct"])
      }).pipe(Effect.provide(setup))
    )
  })
)
