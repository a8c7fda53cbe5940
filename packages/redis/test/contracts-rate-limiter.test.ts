import { afterAll } from "@effect/vitest"
import { rateLimiterContract } from "@intake/testing"
import { Effect, Layer, TestServices } from "effect"
import { Redis } from "ioredis"
import { RedisRateLimiterLive } from "../src/rate-limiter.js"
import { redisUrl, testConnection, withRedis } from "../src/testing.js"

withRedis("RateLimiter contract: redis", () => {
  // Redis's own clock, which the script reads: the suite brackets each check with it.
  const clockClient = new Redis(redisUrl, { lazyConnect: true })
  afterAll(() => clockClient.disconnect())
  const redisNow = Effect.promise(() => clockClient.time()).pipe(
    Effect.map(([seconds, micros]) => Number(seconds) * 1000 + Math.floor(Number(micros) / 1000))
  )

  rateLimiterContract("redis", RedisRateLimiterLive.pipe(Layer.provide(testConnection())), {
    // The window is Redis's: only real time moves it.
    advance: (millis) => TestServices.provideLive(Effect.sleep(millis)),
    now: redisNow,
    windowMs: 2_000
  })
})
