/** REDIS_CLUSTER_NODES: a Redis Cluster's nodes as host:port,…, in place of REDIS_URL (docs/operations.md, Redis Cluster). */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either } from "effect"
import { describeConfigError, serverConfig } from "../src/config.js"

const read = (env: Record<string, string>) =>
  Effect.either(serverConfig).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.runSync
  )

describe("REDIS_CLUSTER_NODES", () => {
  it("is a list of host:port, empty unless set", () => {
    expect(Either.map(read({}), (c) => c.redisClusterNodes)).toEqual(Either.right([]))
    expect(
      Either.map(
        read({ REDIS_CLUSTER_NODES: "127.0.0.1:7000, redis-a.internal:7001,[::1]:7002" }),
        (c) => c.redisClusterNodes
      )
    ).toEqual(Either.right(["127.0.0.1:7000", "redis-a.internal:7001", "[::1]:7002"]))
  })

  it.each([
    [{ REDIS_CLUSTER_NODES: "127.0.0.1" }, /expected host:port/],
    [{ REDIS_CLUSTER_NODES: "redis://127.0.0.1:7000" }, /expected host:port/],
    [{ REDIS_CLUSTER_NODES: "127.0.0.1:7000", REDIS_URL: "redis://127.0.0.1:6379" }, /not both/]
  ])("%o stops the server at start with one line naming the variable", (env, reason) => {
    const config = read(env)
    expect(Either.isLeft(config)).toBe(true)
    if (Either.isLeft(config)) {
      expect(describeConfigError(config.left)).toMatch(/^Invalid configuration: REDIS_CLUSTER_NODES: /)
      expect(describeConfigError(config.left)).toMatch(reason)
    }
  })
})
