/**
 * The embedded runtime: every use case over the in-memory adapters (one MemoryDatabase),
 * with the webhook settings of the configuration. With a Redis URL, rate limits and
 * key-cache invalidation go through Redis instead, so they hold across instances.
 */
import { type AccessSettings, makeUseCasesLayer, WebhookSettings } from "@intake/domain"
import { MemoryPortsLive } from "@intake/memory"
import { RedisConnection, RedisLive } from "@intake/redis"
import { Effect, Layer, Option, Redacted } from "effect"
import { makeReadiness, Readiness, readinessOf } from "./readiness.js"

export interface RuntimeOptions {
  readonly webhookAllowPrivateNetworks: boolean
  /** REDIS_URL: the shared rate limiter and access invalidation; in-process ones without. */
  readonly redisUrl?: Option.Option<Redacted.Redacted>
  /** Before every Redis key and channel (default "intake:"). */
  readonly redisKeyPrefix?: string
  /** Access settings beyond the domain's defaults (e.g. the key cache TTL). */
  readonly access?: Partial<AccessSettings>
}

/**
 * Redis's RateLimiter and AccessInvalidation in place of those of `ports`, and a readiness
 * check that pings it; `ports` as they are (always ready) without a URL.
 */
export const withSharedAccessState = <A, E, R>(
  ports: Layer.Layer<A, E, R>,
  redisUrl: Option.Option<Redacted.Redacted>,
  keyPrefix?: string
) =>
  Option.match(redisUrl, {
    onNone: () => Layer.merge(ports, makeReadiness({})),
    onSome: (url) =>
      // The right side of a merge wins: Redis's services replace the in-process ones.
      Layer.merge(
        ports,
        Layer.effect(
          Readiness,
          Effect.map(RedisConnection, ({ ping }) => readinessOf({ redis: ping }))
        ).pipe(
          Layer.provideMerge(
            RedisLive({ url: Redacted.value(url), ...(keyPrefix === undefined ? {} : { keyPrefix }) })
          )
        )
      )
  })

export const embeddedRuntime = (options: RuntimeOptions) =>
  makeUseCasesLayer(options.access).pipe(
    Layer.provideMerge(
      Layer.merge(
        withSharedAccessState(MemoryPortsLive, options.redisUrl ?? Option.none(), options.redisKeyPrefix),
        WebhookSettings.layer({ allowPrivateNetworks: options.webhookAllowPrivateNetworks })
      )
    )
  )
