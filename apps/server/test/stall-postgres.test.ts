/**
 * A server process stalled mid-transaction (SIGSTOP, as a GC or VM pause or a partition
 * would leave it) while another serves the same workspace on one PostgreSQL database: the
 * stalled one's session is ended by the idle-in-transaction timeout, its row locks go with
 * it, and the healthy server's writes answer within seconds instead of at their deadline.
 * A create's quota lock is taken by its last statement, which carries the COMMIT
 * (docs/performance.md, Round trips of a create): a stopped server cannot hold that one. Nor,
 * without attempts to queue, the contact, which goes with it. With attempts to queue (here
 * skipped ones, for a paused endpoint: nothing is sent), the contact is a statement of its
 * own, before the events and their attempts: the server is stopped with a new contact
 * inserted and not committed, which every other create naming the same email waits for.
 */
import { randomUUID } from "node:crypto"
import { performance } from "node:perf_hooks"
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { layerPostgres } from "@intake/postgres"
import { freshDatabaseUrl, probeTestServer, testServerUrl } from "@intake/postgres/testing"
import { Context, Deferred, Effect, Layer, Redacted } from "effect"
import { ADMIN_TOKEN, call } from "./harness.js"
import { startServer, timedGet } from "./process.js"
import { admin, dataOf, provision } from "./support.js"

const postgresAvailable: boolean = await (async () => {
  const probe = await probeTestServer()
  if (probe._tag === "Right") return true
  const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
  if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
  console.warn(`${message}: skipping the stalled-server test.`)
  return false
})()

const submission = (email: string) => ({ data: { name: "Ada", email, message: "Hello" } })

const post = (baseUrl: string, key: string, botId: string, signal?: AbortSignal, email = "ada@example.com") =>
  Effect.promise(async () => {
    const started = performance.now()
    try {
      const response = await fetch(`${baseUrl}/v1/intake-bots/${botId}/submissions`, {
        method: "POST",
        // With a key, as clients retrying writes send them.
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          "idempotency-key": randomUUID()
        },
        body: JSON.stringify(submission(email)),
        ...(signal === undefined ? {} : { signal })
      })
      const body = await response.text()
      return { status: response.status, body, ms: performance.now() - started }
    } catch {
      return { status: 0, body: "", ms: performance.now() - started }
    }
  })

/** Sessions waiting for a lock in a create's contact statement (intake_contact_for, inserting a new contact). */
const contactStatementsWaitingOnALock = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ count: number }>`SELECT count(*)::int AS count FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'
        AND query LIKE '%intake_contact_for%'`,
    (rows) => rows[0]!.count
  )

/** Sessions of the database idle inside a transaction while holding a contact they inserted. */
const lockHoldersIdleInTransaction = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ count: number }>`SELECT count(DISTINCT a.pid)::int AS count
      FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
      WHERE a.datname = current_database() AND a.state = 'idle in transaction'
        AND l.relation = 'contacts'::regclass AND l.mode = 'RowExclusiveLock'`,
    (rows) => rows[0]!.count
  )

it.scopedLive.skipIf(!postgresAvailable)(
  "a server stopped mid-transaction holds no workspace's writes on another server for more than seconds",
  () =>
    Effect.gen(function* () {
      const database = yield* freshDatabaseUrl()
      // A deadline well past the idle-in-transaction timeout (5 s): a write that waits for the
      // stalled server's locks shows as a 500 at 20 s, one that does not as a 201 within seconds.
      const env = {
        DATABASE_URL: database.url,
        INTAKE_ADMIN_TOKEN: ADMIN_TOKEN,
        REQUEST_TIMEOUT: "20s",
        // The paused endpoint's address, which is never called.
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true"
      }
      const stalled = yield* startServer(env)
      const healthy = yield* startServer(env)
      const tenant = yield* provision(stalled.baseUrl)
      dataOf(
        yield* admin(stalled.baseUrl, "PATCH", `/admin/workspaces/${tenant.workspaceId}`, {
          monthly_submission_quota: 1_000_000
        })
      )
      // A paused endpoint: each create queues a skipped attempt for each of its events.
      const endpoint = dataOf(
        yield* call(stalled.baseUrl, "POST", "/v1/webhooks", {
          key: tenant.key,
          body: {
            url: "http://127.0.0.1:9/never-called",
            events: ["submission.completed", "contact.created"]
          }
        })
      ).webhook
      dataOf(
        yield* call(stalled.baseUrl, "PATCH", `/v1/webhooks/${endpoint.id}`, {
          key: tenant.key,
          body: { status: "paused" }
        })
      )
      const sql = Context.get(
        yield* Layer.build(layerPostgres({ url: Redacted.make(database.url), maxConnections: 1 })),
        SqlClient.SqlClient
      )

      // Some creates first: the stalled server's connections and prepared statements are
      // ready, and the workspace's usage row exists, before the test takes its lock.
      for (let i = 0; i < 3; i++) yield* post(stalled.baseUrl, tenant.key, tenant.botId)

      // Stopped while it holds a lock inside an open transaction, for certain: this test
      // holds the workspace's row locked, so one POST with a new email waits in its contact
      // statement (the new contact's foreign key wants the workspace's row); the server is
      // stopped, then the test's lock released: the statement finishes on a stopped server,
      // whose session stays idle in its transaction with the new contact not committed.
      const email = `grace-${randomUUID()}@example.com`
      // Whatever happens, it is not left stopped (its SIGTERM at the end would wait for nothing).
      yield* Effect.addFinalizer(() => Effect.sync(() => process.kill(stalled.child.pid!, "SIGCONT")))
      const blocker = Context.get(
        yield* Layer.build(layerPostgres({ url: Redacted.make(database.url), maxConnections: 1 })),
        SqlClient.SqlClient
      )
      const locked = yield* Deferred.make<void>()
      const rollBack = yield* Deferred.make<void>()
      yield* Effect.forkScoped(
        blocker
          .withTransaction(
            Effect.gen(function* () {
              yield* blocker`SELECT 1 FROM workspaces WHERE id = ${tenant.workspaceId} FOR UPDATE`
              yield* Deferred.succeed(locked, undefined)
              yield* Deferred.await(rollBack)
              return yield* Effect.fail("rolled back by the test" as const)
            })
          )
          .pipe(Effect.ignore)
      )
      yield* Deferred.await(locked)
      const stopped = new AbortController()
      yield* Effect.addFinalizer(() => Effect.sync(() => stopped.abort()))
      yield* Effect.forkScoped(post(stalled.baseUrl, tenant.key, tenant.botId, stopped.signal, email))
      let waiting = false
      for (let attempt = 0; attempt < 200 && !waiting; attempt++) {
        yield* Effect.sleep("50 millis")
        waiting = (yield* contactStatementsWaitingOnALock(sql)) > 0
      }
      expect(waiting).toBe(true)
      process.kill(stalled.child.pid!, "SIGSTOP")
      yield* Effect.sleep("100 millis")
      yield* Deferred.succeed(rollBack, undefined)
      let held = false
      for (let attempt = 0; attempt < 100 && !held; attempt++) {
        yield* Effect.sleep("20 millis")
        held = (yield* lockHoldersIdleInTransaction(sql)) > 0
      }
      expect(held).toBe(true)

      // The healthy server's writes to the same workspace answer within seconds: done, or
      // (queued behind several stalled transactions past the lock timeout) a sanitized 500.
      // Until three in a row are done at once: the stalled server's queued transactions
      // each take the locks in turn (and lose them at the idle timeout) before that.
      const stoppedAt = performance.now()
      const writes: Array<Effect.Effect.Success<ReturnType<typeof post>>> = []
      const settled = () =>
        writes.length >= 3 && writes.slice(-3).every((w) => w.status === 201 && w.ms < 1_000)
      while (!settled() && performance.now() - stoppedAt < 40_000)
        writes.push(yield* post(healthy.baseUrl, tenant.key, tenant.botId, undefined, email))
      console.log(
        `writes on the healthy server while the other is stopped: ${writes.map((w) => `${w.status} in ${Math.round(w.ms)} ms`).join(", ")}`
      )
      for (const answer of writes) {
        expect(answer.ms).toBeLessThan(10_000)
        if (answer.status !== 201)
          expect(JSON.parse(answer.body)).toEqual({
            success: false,
            error: { code: "internal_error", message: "An unexpected error occurred." }
          })
      }
      expect(settled()).toBe(true)

      // Resumed, the stopped server serves again (its ended session is replaced).
      process.kill(stalled.child.pid!, "SIGCONT")
      stopped.abort()
      const back = yield* timedGet(stalled.baseUrl, "/v1/intake-bots", tenant.key).pipe(
        Effect.repeat({ until: (answer) => answer.status === 200 }),
        Effect.timeout("10 seconds")
      )
      expect(back.status).toBe(200)
    }),
  120_000
)
