/**
 * The server on a Redis Cluster of the test's own (three masters, one replica each): with
 * REDIS_CLUSTER_NODES two instances share one exact window and hear each other's
 * revocations, through a master failover; with REDIS_URL pointed at one node, the MOVED
 * answers are a configuration fault that /readyz and the logs name (docs/operations.md, Redis
 * Cluster and Redis faults). One cluster serves the whole file.
 */
import { expect, layer } from "@effect/vitest"
import { freshDatabaseUrl } from "@intake/postgres/testing"
import { uniquePrefix } from "@intake/redis/testing"
import {
  type RedisCluster,
  redisCli,
  startRedisCluster,
  withRedisCluster
} from "@intake/redis/testing-cluster"
import { captureLogs } from "@intake/testing"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { embeddedRuntime } from "../src/runtime.js"
import { ADMIN_TOKEN, BaseUrl, call, testServer } from "./harness.js"
import { startServer, timedGet } from "./process.js"
import { dataOf, provision } from "./support.js"

class Cluster extends Context.Tag("test/RedisCluster")<Cluster, RedisCluster>() {}

withRedisCluster("the server on a Redis Cluster", () => {
  layer(Layer.scoped(Cluster, startRedisCluster), { timeout: 60_000, excludeTestServices: true })(
    "Redis Cluster",
    (it) => {
      it.scoped(
        "two instances on REDIS_CLUSTER_NODES: exactly 100 of 130 alternating requests of a Pro key answer 200 through a master failover, and a revocation on A reaches B",
        () =>
          Effect.gen(function* () {
            const cluster = yield* Cluster
            const prefix = uniquePrefix()
            const shared = {
              DATABASE_URL: (yield* freshDatabaseUrl()).url,
              INTAKE_ADMIN_TOKEN: ADMIN_TOKEN,
              REDIS_CLUSTER_NODES: cluster.nodes,
              REDIS_KEY_PREFIX: prefix
            }
            // One after the other: the first applies the migrations.
            const a = yield* startServer(shared)
            const b = yield* startServer(shared)
            expect(a.output().stdout).toContain("rate limits on Redis Cluster")
            const tenant = yield* provision(a.baseUrl, { plan: "pro", rateLimitPerMinute: null })
            const windowKey = `${prefix}rl:{key:${tenant.keyId}}`
            const get = (i: number) => timedGet((i % 2 === 0 ? a : b).baseUrl, "/v1/intake-bots", tenant.key)
            const before = yield* Effect.forEach(
              Array.from({ length: 80 }, (_, i) => i),
              get,
              { concurrency: 10 }
            )
            // The window's master hands over to its replica while 40 requests are sent, one
            // every 25 ms: the last 20 admitted ones and the first 20 refusals go through it.
            const failoverStart = Date.now()
            const [promoted, during] = yield* Effect.all(
              [
                cluster.failover(windowKey).pipe(Effect.map((moved) => ({ ...moved, at: Date.now() }))),
                Effect.forEach(
                  Array.from({ length: 40 }, (_, i) => i),
                  (i) => Effect.zipLeft(get(i), Effect.sleep("25 millis"))
                )
              ],
              { concurrency: 2 }
            )
            const after = yield* Effect.forEach(
              Array.from({ length: 10 }, (_, i) => i),
              get
            )
            const overlapping = during.filter((x) => x.sentAt <= promoted.at && x.receivedAt >= failoverStart)
            console.log(
              `failover took ${promoted.at - failoverStart} ms; ${overlapping.length} of 40 requests were sent during it`
            )
            // The test means something only if the failover happened under traffic.
            expect(overlapping.length).toBeGreaterThan(0)
            const statuses = [...before, ...during, ...after].map((answer) => answer.status)
            expect(statuses.filter((status) => status === 200)).toHaveLength(100)
            expect(statuses.filter((status) => status === 429)).toHaveLength(30)
            expect(statuses.slice(0, 100).every((status) => status === 200)).toBe(true)
            const count = yield* redisCli(promoted.master, "ZCARD", windowKey).pipe(Effect.orDie)
            expect(count).toBe("100")
            for (const server of [a, b]) {
              const ready = JSON.parse((yield* timedGet(server.baseUrl, "/readyz")).body)
              expect(ready.data).toMatchObject({ redis: "ok", rate_limiter: "enforcing" })
            }

            // B has the key cached; A revokes it; B refuses it within a second.
            dataOf(
              yield* call(a.baseUrl, "POST", `/admin/api-keys/${tenant.keyId}/revoke`, { key: ADMIN_TOKEN })
            )
            const refused = yield* timedGet(b.baseUrl, "/v1/intake-bots", tenant.key).pipe(
              Effect.repeat({ until: (answer) => answer.status === 401 }),
              Effect.timeout("1 second")
            )
            expect(refused.status).toBe(401)
          }),
        120_000
      )

      it.scoped(
        "REDIS_URL pointed at one node of the cluster: its MOVED answers are a configuration fault, named in /readyz and logged as an error once",
        () =>
          Effect.gen(function* () {
            const cluster = yield* Cluster
            // A replica redirects every key to its master: MOVED for whatever slot a key falls in.
            const { replica } = yield* cluster.shardOf("any key")
            const logs = captureLogs()
            const server = testServer(
              embeddedRuntime({
                webhookAllowPrivateNetworks: false,
                redisUrl: Option.some(Redacted.make(`redis://127.0.0.1:${replica}`)),
                redisKeyPrefix: uniquePrefix()
              })
            ).pipe(Layer.provide(logs.layer))
            const baseUrl = yield* Effect.provide(BaseUrl, yield* Layer.build(server))
            const tenant = yield* provision(baseUrl)
            for (let i = 0; i < 5; i++)
              expect((yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })).status).toBe(200)

            const ready = yield* call(baseUrl, "GET", "/readyz")
            expect(ready.status).toBe(200)
            expect(dataOf(ready)).toMatchObject({
              redis: "misconfigured",
              redis_fault: { code: "MOVED", reason: expect.stringContaining("REDIS_CLUSTER_NODES") },
              rate_limiter: "failing_open"
            })
            expect(dataOf(ready).redis_fault.count).toBeGreaterThanOrEqual(1)
            const faults = logs.matching(/Redis configuration fault/)
            expect(faults).toHaveLength(1)
            expect(faults[0]).toMatchObject({ level: "error" })
            expect(faults[0]?.message).toContain("MOVED")
            // The cause (with the node it redirects to) is in the log line, for the operator.
            expect(faults[0]?.cause).toMatch(/MOVED \d+ 127\.0\.0\.1:\d+/)
          }),
        60_000
      )
    }
  )
})
