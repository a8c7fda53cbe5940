/**
 * The sliding-window log (docs/rules.md, Limits and rate limits) in Redis, shared by every instance.
 *
 * One Lua script does the whole check atomically in one round trip (EVALSHA; ioredis
 * sends EVAL instead the first time on a connection and after NOSCRIPT). Per bucket, a
 * sorted set holds the admitted requests scored by admission time. The time is Redis's
 * own (`TIME`), so instances whose clocks disagree still share one window. The key is
 * hash-tagged, `<prefix>rl:{<bucket>}`, so the script's only key names its slot on Redis
 * Cluster. Memory per key is bounded: what left the window is removed on every check,
 * and the key expires one window after its newest admission.
 */
import { randomBytes } from "node:crypto"
import { performance } from "node:perf_hooks"
import { RateLimiter, retryAfterSeconds, StorageUnavailable } from "@intake/domain"
import { Effect, Layer } from "effect"
import { type RedisClient, RedisConnection, writeTogether } from "./connection.js"
import type { RedisFaults } from "./faults.js"

/**
 * KEYS[1] the bucket's sorted set; ARGV[1] limit, ARGV[2] window in ms, ARGV[3] a member
 * unique to this request (two requests in one millisecond must not collapse into one),
 * ARGV[4] "1" to record an admitted request, "0" to only look (peek).
 * Answers { allowed 0|1, remaining, resetAt ms, now ms }.
 *
 * A request admitted at t counts while t > now - window, as in the domain's SlidingWindowLog.
 * Scores are whole milliseconds (13 digits), which Lua's number-to-string conversion
 * (14 significant digits) passes to Redis exactly.
 */
export const slidingWindowScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < limit then
  allowed = 1
end
if allowed == 1 and ARGV[4] == '1' then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  count = count + 1
end
local resetAt = now
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if oldest[2] then resetAt = tonumber(oldest[2]) + window end
local remaining = limit - count
if remaining < 0 then remaining = 0 end
return { allowed, remaining, resetAt, now }
`

const COMMAND = "intakeSlidingWindow"

type ScriptReply = [allowed: number, remaining: number, resetAt: number, now: number]

interface SlidingWindowClient {
  readonly [COMMAND]: (
    key: string,
    limit: number,
    windowMs: number,
    member: string,
    record: "1" | "0"
  ) => Promise<ScriptReply>
}

/**
 * How late a timer may fire before the event loop, not the store, is taken to have spent
 * the wait (docs/rules.md, Limits and rate limits).
 */
const LATE_LOOP_MS = 50

/**
 * The answer of `promise`, or a failure once the store has had `ms` to give it. The bound
 * measures Redis, not this process: a timer that fires late means the event loop was busy
 * (parsing bodies, a long collection), and Redis's answer may be waiting unread in the
 * socket, or the command may only just have left. Then the store gets its bound once more,
 * counted from now, and a reply read meanwhile counts however late it is read. A store that
 * stays silent still fails the check, at worst after twice the bound.
 */
const withinStoreTime = <A>(promise: Promise<A>, ms: number) =>
  new Promise<A>((resolve, reject) => {
    let dueAt = performance.now() + ms
    let extended = false
    const expire = () => {
      if (!extended && performance.now() - dueAt > LATE_LOOP_MS) {
        extended = true
        dueAt = performance.now() + ms
        timer = setTimeout(expire, ms)
        return
      }
      reject(new Error(`Redis did not answer within ${ms} ms`))
    }
    let timer = setTimeout(expire, ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      }
    )
  })

/** `<prefix>rl:{<bucket>}`: the braces make the bucket the Redis Cluster hash tag. */
export const bucketKey = (keyPrefix: string, bucket: string) => `${keyPrefix}rl:{${bucket}}`

/**
 * `commandTimeoutMs`: the connection's bound on a command (RedisSettings), applied here
 * beside the caller's, on the store's time (the connection sets no timer of its own).
 * `faults` records the failures that are configuration faults (faults.ts); they fail as
 * StorageUnavailable all the same, so the limiter fails open, loudly.
 */
export const makeRedisRateLimiter = (
  client: RedisClient,
  keyPrefix: string,
  commandTimeoutMs = Number.POSITIVE_INFINITY,
  faults?: RedisFaults
): RateLimiter["Type"] => {
  client.defineCommand(COMMAND, { numberOfKeys: 1, lua: slidingWindowScript })
  const script = client as unknown as SlidingWindowClient
  // Members are this instance's id and a counter: unique across instances and within a millisecond.
  const instance = randomBytes(6).toString("base64url")
  let sequence = 0
  // The checks of one turn of the event loop (the requests it read) go to Redis in one write.
  const together = writeTogether(client)

  const run = (bucket: string, limit: number, windowMs: number, timeoutMs: number, record: "1" | "0") =>
    Effect.tryPromise({
      try: () => {
        together()
        return withinStoreTime(
          script[COMMAND](bucketKey(keyPrefix, bucket), limit, windowMs, `${instance}:${sequence++}`, record),
          Math.min(timeoutMs, commandTimeoutMs)
        )
      },
      catch: (cause) =>
        new StorageUnavailable({ operation: record === "1" ? "RateLimiter.hit" : "RateLimiter.peek", cause })
    }).pipe(
      Effect.tapError((error) => (faults === undefined ? Effect.void : faults.record(error.cause))),
      Effect.map(([allowed, remaining, resetAt, now]) => ({
        allowed: allowed === 1,
        limit,
        remaining,
        resetAt,
        retryAfterSeconds: allowed === 1 ? 0 : retryAfterSeconds(resetAt, now)
      }))
    )

  return {
    hit: (bucket, limit, windowMs, timeoutMs) => run(bucket, limit, windowMs, timeoutMs, "1"),
    peek: (bucket, limit, windowMs, timeoutMs) => run(bucket, limit, windowMs, timeoutMs, "0")
  }
}

export const RedisRateLimiterLive = Layer.effect(
  RateLimiter,
  Effect.map(RedisConnection, ({ client, settings, faults }) =>
    makeRedisRateLimiter(client, settings.keyPrefix, settings.commandTimeoutMs, faults)
  )
)
