/**
 * Everything Redis gives the server, on one shared connection (plus the subscriber's own):
 * the rate limiter, cross-instance access invalidation, and the connection itself for
 * readiness checks. Connections close when the layer's scope closes.
 */
import { Layer } from "effect"
import { RedisAccessInvalidationLive } from "./access-invalidation.js"
import { RedisConnectionLive, type RedisSettings } from "./connection.js"
import { RedisRateLimiterLive } from "./rate-limiter.js"

export const RedisLive = (settings: string | (Partial<RedisSettings> & Pick<RedisSettings, "url">)) =>
  Layer.mergeAll(RedisRateLimiterLive, RedisAccessInvalidationLive).pipe(
    Layer.provideMerge(RedisConnectionLive(typeof settings === "string" ? { url: settings } : settings))
  )
