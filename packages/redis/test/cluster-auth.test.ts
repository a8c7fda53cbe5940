/**
 * A Redis Cluster whose nodes ask for a password (REDIS_CLUSTER_PASSWORD, docs/operations.md,
 * Redis Cluster): with it the limiter is exact on the cluster; without it Redis's refusal is a
 * configuration fault that readiness shows, not an outage nor a healthy limiter.
 */
import { expect, layer } from "@effect/vitest"
import { RateLimiter } from "@intake/domain"
import { captureLogs } from "@intake/testing"
import { Context, Effect, Either, Layer, Option } from "effect"
import { RedisConnection, RedisConnectionLive, type RedisSettings } from "../src/connection.js"
import { RedisRateLimiterLive } from "../src/rate-limiter.js"
import { uniquePrefix } from "../src/testing.js"
import {
  type RedisCluster,
  startRedisClusterWith,
  waitUntil,
  withRedisCluster
} from "../src/testing-cluster.js"

class Cluster extends Context.Tag("test/PasswordCluster")<Cluster, RedisCluster>() {}

const PASSWORD = "cluster-s3cret"

/** The limiter and its connection on the cluster, built for the test's scope. */
const limiterOn = (cluster: RedisCluster, clusterAuth: RedisSettings["clusterAuth"]) =>
  Layer.build(
    RedisRateLimiterLive.pipe(
      Layer.provideMerge(
        RedisConnectionLive({
          url: "",
          clusterNodes: cluster.nodes.split(","),
          keyPrefix: uniquePrefix(),
          ...(clusterAuth === undefined ? {} : { clusterAuth })
        })
      )
    )
  ).pipe(
    Effect.map((context) => ({
      limiter: Context.get(context, RateLimiter),
      connection: Context.get(context, RedisConnection)
    }))
  )

withRedisCluster("a Redis Cluster with a password", () => {
  layer(Layer.scoped(Cluster, startRedisClusterWith({ password: PASSWORD })), {
    timeout: 60_000,
    excludeTestServices: true
  })("REDIS_CLUSTER_PASSWORD", (it) => {
    it.scoped("with the password, the limiter admits exactly its limit", () =>
      Effect.gen(function* () {
        const { limiter } = yield* limiterOn(yield* Cluster, { password: PASSWORD })
        const decisions = yield* Effect.forEach(Array.from({ length: 5 }), () =>
          limiter.hit("key:k1", 3, 60_000, 5_000)
        )
        expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false])
      })
    )

    it.scoped(
      "without it, each check fails (the limiter fails open) and the refusal is a configuration fault",
      () =>
        Effect.gen(function* () {
          const logs = captureLogs()
          const { connection, limiter } = yield* Effect.provide(
            limiterOn(yield* Cluster, undefined),
            logs.layer
          )
          const fault = Effect.map(
            connection.faults.recent,
            Option.map((f) => f.code)
          )
          yield* waitUntil(
            "a NOAUTH fault recorded",
            Effect.map(fault, (code) => Option.isSome(code))
          )
          expect(Option.getOrThrow(yield* fault)).toBe("NOAUTH")
          const check = yield* Effect.either(limiter.hit("key:k2", 3, 60_000, 2_000))
          expect(Either.isLeft(check)).toBe(true)
          // Logged as an error saying what to set.
          expect(logs.matching(/configuration fault NOAUTH/).map((line) => line.level)).toContain("error")
          expect(logs.matching(/configuration fault NOAUTH/)[0]?.message).toContain("REDIS_CLUSTER_PASSWORD")
        })
    )
  })
})
