import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import { AccessInvalidation, type AccessInvalidationEvent } from "@intake/domain"
import { Chunk, Context, Duration, Effect, Layer, Option, Queue } from "effect"
import { invalidationChannel, RedisAccessInvalidationLive } from "../src/access-invalidation.js"
import { RedisConnection, type RedisSettings } from "../src/connection.js"
import { closedPort, startRedisProxy, testConnection, uniquePrefix, withRedis } from "../src/testing.js"

/** One more instance, with its own connections, and a queue of what its handler receives. */
const instance = (settings: Partial<RedisSettings> = {}) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      RedisAccessInvalidationLive.pipe(Layer.provideMerge(testConnection(settings)))
    )
    const invalidation = Context.get(context, AccessInvalidation)
    const received = yield* Queue.unbounded<AccessInvalidationEvent>()
    yield* invalidation.subscribe((event) => Queue.offer(received, event))
    return { invalidation, received, client: Context.get(context, RedisConnection).client }
  })

const nextWithin = (received: Queue.Queue<AccessInvalidationEvent>, millis: number) =>
  Queue.take(received).pipe(Effect.timeoutOption(Duration.millis(millis)))

const revoked = (keyHash: string): AccessInvalidationEvent => ({ _tag: "ApiKeyChanged", keyHash })

withRedis("Redis access invalidation", () => {
  it.scopedLive(
    "with Redis unreachable, publish still succeeds at once and this instance's handlers run",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(closedPort)
        const { invalidation, received } = yield* instance({
          url: `redis://127.0.0.1:${port}`,
          connectTimeoutMs: 200
        })
        const started = performance.now()
        yield* invalidation.publish(revoked("h1"))
        expect(performance.now() - started).toBeLessThan(50)
        expect(Chunk.toArray(yield* Queue.takeAll(received))).toEqual([revoked("h1")])
      })
  )

  it.scopedLive("instances under another key prefix (another deployment) do not hear each other", () =>
    Effect.gen(function* () {
      const ours = uniquePrefix()
      const publisher = yield* instance({ keyPrefix: ours })
      const peer = yield* instance({ keyPrefix: ours })
      const stranger = yield* instance({ keyPrefix: uniquePrefix() })
      yield* publisher.invalidation.publish(revoked("h2"))
      expect(yield* nextWithin(peer.received, 1_000)).toEqual(Option.some(revoked("h2")))
      expect(yield* nextWithin(stranger.received, 300)).toEqual(Option.none())
    })
  )

  it.scopedLive("a malformed message on the channel is ignored; later ones still arrive", () =>
    Effect.gen(function* () {
      const keyPrefix = uniquePrefix()
      const publisher = yield* instance({ keyPrefix })
      const peer = yield* instance({ keyPrefix })
      const channel = invalidationChannel(keyPrefix)
      for (const junk of ["not json", "{}", JSON.stringify({ origin: "x", event: { _tag: "Other" } })])
        yield* Effect.promise(() => publisher.client.publish(channel, junk))
      yield* publisher.invalidation.publish(revoked("h3"))
      expect(yield* nextWithin(peer.received, 1_000)).toEqual(Option.some(revoked("h3")))
    })
  )

  it.scopedLive("after Redis comes back, an instance subscribes again by itself", () =>
    Effect.gen(function* () {
      const keyPrefix = uniquePrefix()
      const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
        Effect.promise(p.stop)
      )
      const publisher = yield* instance({ keyPrefix })
      const peer = yield* instance({ keyPrefix, url: proxy.url })
      yield* publisher.invalidation.publish(revoked("before"))
      expect(yield* nextWithin(peer.received, 1_000)).toEqual(Option.some(revoked("before")))

      yield* Effect.promise(proxy.stop)
      yield* publisher.invalidation.publish(revoked("lost"))
      yield* Effect.promise(proxy.start)

      // Publish until one gets through: the peer reconnects and subscribes again on its own.
      const arrived = yield* publisher.invalidation
        .publish(revoked("after"))
        .pipe(
          Effect.zipRight(nextWithin(peer.received, 100)),
          Effect.repeat({ until: Option.isSome }),
          Effect.timeout("5 seconds")
        )
      expect(arrived).toEqual(Option.some(revoked("after")))
    })
  )
})
