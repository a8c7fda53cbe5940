/**
 * What the Redis tests share: the Redis to test against, a key prefix of their own per
 * run (removed afterwards, nothing else is touched), and a TCP proxy that can "stop" and
 * "restart" Redis for the tests of failure without stopping the real server.
 */
import { randomUUID } from "node:crypto"
import net from "node:net"
import { describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Redis } from "ioredis"
import { RedisConnectionLive, type RedisSettings } from "./connection.js"

export const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

const reachable = (url: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = net.connect({ host: hostname || "127.0.0.1", port: Number(port || 6379) })
    const done = (answer: boolean) => {
      socket.destroy()
      resolve(answer)
    }
    socket.setTimeout(1_000, () => done(false))
    socket.once("error", () => done(false))
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")))
    socket.once("connect", () => socket.write("PING\r\n"))
  })

const redisIsUp = await reachable(redisUrl)
if (!redisIsUp && process.env.CI === "true") {
  throw new Error(`CI=true: the Redis tests need a Redis at ${redisUrl} (set REDIS_URL), and none answers`)
}

/**
 * Declares `suite` when Redis answers. Outside CI a missing Redis skips it with a message
 * that says so; in CI this module has already failed the run.
 */
export const withRedis = (name: string, suite: () => void) => {
  if (redisIsUp) suite()
  else
    describe.skip(`${name} (skipped: no Redis at ${redisUrl}; start one or set REDIS_URL)`, () => {
      it("needs Redis", () => {})
    })
}

/** A prefix no other test run uses, so parallel runs never see each other's keys or messages. */
export const uniquePrefix = () => `intake-test:${randomUUID()}:`

export const deleteKeysWithPrefix = async (client: Redis, prefix: string) => {
  let cursor = "0"
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500)
    cursor = next
    if (keys.length > 0) await client.del(...keys)
  } while (cursor !== "0")
}

/** Deletes every key under `prefix` through a short-lived connection; quiet when Redis is gone. */
const cleanUp = (prefix: string) =>
  Effect.promise(async () => {
    const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      await deleteKeysWithPrefix(client, prefix)
    } catch {
      // Nothing to clean when Redis is gone.
    } finally {
      client.disconnect()
    }
  })

/** A plain connection to the test Redis, for a test to look at or plant keys; closed with the scope. */
export const scopedClient = Effect.acquireRelease(
  Effect.sync(() => new Redis(redisUrl, { maxRetriesPerRequest: 1 })),
  (client) => Effect.sync(() => client.disconnect())
)

/** A fresh prefix for a scope (e.g. REDIS_KEY_PREFIX of server processes); its keys are deleted when it closes. */
export const scopedPrefix = Effect.acquireRelease(Effect.sync(uniquePrefix), cleanUp)

/**
 * A connection under a fresh prefix; when the layer's scope closes, every key under that
 * prefix is deleted, through a connection of its own to the test Redis (a test may have
 * pointed `url` at a proxy it stopped).
 */
export const testConnection = (settings: Partial<RedisSettings> = {}) => {
  const keyPrefix = settings.keyPrefix ?? uniquePrefix()
  const cleanup = Layer.scopedDiscard(Effect.addFinalizer(() => cleanUp(keyPrefix)))
  return Layer.merge(RedisConnectionLive({ url: redisUrl, ...settings, keyPrefix }), cleanup)
}

/** A TCP proxy in front of the test Redis; `stop` drops every connection and refuses new ones. */
export interface RedisProxy {
  readonly url: string
  readonly port: number
  /** Closes the listener and every open connection, like a Redis that died. */
  readonly stop: () => Promise<void>
  /** Listens again on the same port, like a Redis that came back. */
  readonly start: () => Promise<void>
  /** Keeps connections open but forwards nothing more: a Redis that hangs. */
  readonly hang: () => void
}

export const startRedisProxy = async (): Promise<RedisProxy> => {
  const target = new URL(redisUrl)
  const sockets = new Set<net.Socket>()
  let hanging = false
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: target.hostname, port: Number(target.port || 6379) })
    sockets.add(client).add(upstream)
    client.on("data", (data) => {
      if (!hanging) upstream.write(data)
    })
    upstream.on("data", (data) => {
      if (!hanging) client.write(data)
    })
    const close = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on("close", close).on("error", close)
    upstream.on("close", close).on("error", close)
  })
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject)
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject)
        resolve((server.address() as net.AddressInfo).port)
      })
    })
  const port = await listen(0)
  const auth = target.username || target.password ? `${target.username}:${target.password}@` : ""
  return {
    url: `redis://${auth}127.0.0.1:${port}${target.pathname}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        sockets.clear()
        server.close(() => resolve())
      }),
    start: async () => {
      hanging = false
      await listen(port)
    },
    hang: () => {
      hanging = true
    }
  }
}

/** A local port nothing listens on. */
export const closedPort = async (): Promise<number> => {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
