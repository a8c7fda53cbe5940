/**
 * AccessInvalidation over Redis pub/sub: a change made on one instance reaches every
 * instance's key cache at once.
 *
 * `publish` first runs this instance's handlers (so the change is effective here before
 * the caller answers), then publishes to the channel `<prefix>access-invalidation`. It
 * never fails: with Redis down the message is lost, logged, and the other instances'
 * cache TTL (at most 60 s) bounds how long they go on trusting stale entries.
 *
 * Subscribing needs a connection of its own. It subscribes again every time it
 * (re)connects, so a Redis restart costs only the messages sent while it was gone.
 * Messages this instance sent come back to it and are skipped: its handlers already ran.
 */
import { randomBytes } from "node:crypto"
import { AccessInvalidation, type AccessInvalidationEvent, IntakeBotId, WorkspaceId } from "@intake/domain"
import { Deferred, Effect, Either, Layer, Runtime, Schema } from "effect"
import { RedisConnection } from "./connection.js"

type Handler = (event: AccessInvalidationEvent) => Effect.Effect<void>

const InvalidationEvent = Schema.Union(
  Schema.TaggedStruct("ApiKeyChanged", { keyHash: Schema.String }),
  Schema.TaggedStruct("WorkspaceChanged", { workspaceId: WorkspaceId }),
  Schema.TaggedStruct("IntakeBotChanged", { intakeBotId: IntakeBotId })
)

/** What travels on the channel: the event and the instance that published it. */
const InvalidationMessage = Schema.parseJson(
  Schema.Struct({ origin: Schema.String, event: InvalidationEvent })
)
const encodeMessage = Schema.encodeSync(InvalidationMessage)
const decodeMessage = Schema.decodeUnknownEither(InvalidationMessage)

export const invalidationChannel = (keyPrefix: string) => `${keyPrefix}access-invalidation`

export interface RedisAccessInvalidationOptions {
  /** How long building the layer waits for the first subscription before going on without it. */
  readonly subscribeWaitMs?: number
}

export const makeRedisAccessInvalidation = (options: RedisAccessInvalidationOptions = {}) =>
  Layer.scoped(
    AccessInvalidation,
    Effect.gen(function* () {
      const { client, open, settings, faults } = yield* RedisConnection
      const channel = invalidationChannel(settings.keyPrefix)
      const origin = randomBytes(9).toString("base64url")
      const handlers = new Set<Handler>()
      const runtime = yield* Effect.runtime<never>()
      const runFork = Runtime.runFork(runtime)

      const deliver = (event: AccessInvalidationEvent) =>
        Effect.forEach(handlers, (handler) => handler(event), { discard: true })

      // The subscriber's commands may wait for the connection: it does nothing else.
      const subscriber = yield* open("invalidation-subscriber", {
        enableOfflineQueue: true,
        autoResubscribe: false
      })
      const subscribed = yield* Deferred.make<void>()
      subscriber.on("ready", () => {
        subscriber.subscribe(channel).then(
          () => runFork(Deferred.succeed(subscribed, undefined)),
          (error: Error) => runFork(Effect.logWarning(`could not subscribe to ${channel}: ${error.message}`))
        )
      })
      subscriber.on("message", (from: string, payload: string) => {
        if (from !== channel) return
        const decoded = decodeMessage(payload)
        if (Either.isLeft(decoded)) {
          runFork(Effect.logWarning(`ignored a malformed message on ${channel}`))
          return
        }
        if (decoded.right.origin === origin) return
        runFork(deliver(decoded.right.event))
      })

      const waitMs = options.subscribeWaitMs ?? settings.connectTimeoutMs
      const ready = yield* Deferred.await(subscribed).pipe(Effect.timeout(waitMs), Effect.either)
      if (Either.isLeft(ready)) {
        yield* Effect.logWarning(
          `not subscribed to ${channel} after ${waitMs} ms: going on; other instances' changes reach this one at the key cache's TTL until Redis answers`
        )
      }

      return {
        publish: (event) =>
          Effect.zipRight(
            deliver(event),
            Effect.tryPromise({
              try: () => client.publish(channel, encodeMessage({ origin, event })),
              catch: (error) => error
            }).pipe(
              Effect.tapError(faults.record),
              Effect.mapError((error) => (error instanceof Error ? error.message : String(error))),
              Effect.timeoutFail({
                duration: settings.commandTimeoutMs,
                onTimeout: () => `no answer within ${settings.commandTimeoutMs} ms`
              }),
              Effect.catchAll((reason) =>
                Effect.logWarning(
                  `could not publish an access invalidation (${reason}): other instances notice at the key cache's TTL`
                )
              ),
              Effect.asVoid
            )
          ),
        subscribe: (handler) =>
          Effect.acquireRelease(
            Effect.sync(() => {
              // A fresh wrapper per registration, so the same function may subscribe twice.
              const registered: Handler = (event) => handler(event)
              handlers.add(registered)
              return registered
            }),
            (registered) => Effect.sync(() => handlers.delete(registered))
          ).pipe(Effect.asVoid)
      }
    })
  )

export const RedisAccessInvalidationLive = makeRedisAccessInvalidation()
