/** REDIS_CLUSTER_NODES (a Redis Cluster's nodes as host:port,…, in place of REDIS_URL) and its credentials (docs/operations.md, Redis Cluster). */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
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

describe("REDIS_CLUSTER_PASSWORD and REDIS_CLUSTER_USERNAME", () => {
  it("are the cluster nodes' credentials, the password kept redacted", () => {
    const nodes = { REDIS_CLUSTER_NODES: "127.0.0.1:7000" }
    expect(Either.map(read(nodes), (c) => Option.isNone(c.redisClusterAuth))).toEqual(Either.right(true))
    const config = read({ ...nodes, REDIS_CLUSTER_PASSWORD: "s3cret", REDIS_CLUSTER_USERNAME: "intake" })
    const auth = Either.getOrThrow(config).redisClusterAuth.pipe(Option.getOrThrow)
    expect(auth.username).toBe("intake")
    expect(Redacted.value(auth.password)).toBe("s3cret")
    // Printed or logged by mistake, the configuration does not show the password.
    expect(String(auth.password)).not.toContain("s3cret")
    expect(JSON.stringify(Either.getOrThrow(config))).not.toContain("s3cret")
  })

  it.each([
    [{ REDIS_CLUSTER_PASSWORD: "s3cret" }, "REDIS_CLUSTER_PASSWORD", /REDIS_CLUSTER_NODES/],
    [
      { REDIS_URL: "redis://127.0.0.1:6379", REDIS_CLUSTER_PASSWORD: "s3cret" },
      "REDIS_CLUSTER_PASSWORD",
      /in REDIS_URL/
    ],
    [
      { REDIS_CLUSTER_NODES: "127.0.0.1:7000", REDIS_CLUSTER_USERNAME: "intake" },
      "REDIS_CLUSTER_USERNAME",
      /needs REDIS_CLUSTER_PASSWORD/
    ]
  ])("%o stops the server at start with one line naming the variable", (env, name, reason) => {
    const config = read(env)
    expect(Either.isLeft(config)).toBe(true)
    if (Either.isLeft(config)) {
      expect(describeConfigError(config.left)).toMatch(new RegExp(`^Invalid configuration: ${name}: `))
      expect(describeConfigError(config.left)).toMatch(reason)
      expect(describeConfigError(config.left)).not.toContain("s3cret")
    }
  })
})
