import { describe, expect, it } from "@effect/vitest"
import { AccessInvalidation, type AccessInvalidationEvent, makeWorkspaceId } from "@intake/domain"
import { Chunk, Context, Duration, Effect, Exit, Layer, Option, Queue, Scope } from "effect"
import { uniqueId } from "../records.js"

export interface AccessInvalidationContractOptions {
  /**
   * Whether two builds of the layer are two instances on one transport (Redis: two
   * connections to one server), so the cross-instance cases apply. A single-process
   * adapter (memory) has no other instance to reach.
   */
  readonly sharedTransport: boolean
}

/** One more instance of the adapter, living until the test's scope closes. */
const instanceOf = (layer: Layer.Layer<AccessInvalidation>) =>
  Effect.map(Layer.build(layer), (context) => Context.get(context, AccessInvalidation))

/** Subscribes a handler that records every event it gets, in order. */
const recorder = (invalidation: AccessInvalidation["Type"]) =>
  Effect.gen(function* () {
    const received = yield* Queue.unbounded<AccessInvalidationEvent>()
    yield* invalidation.subscribe((event) => Queue.offer(received, event))
    return received
  })

const keyChanged = (): AccessInvalidationEvent => ({ _tag: "ApiKeyChanged", keyHash: uniqueId("hash") })
const workspaceChanged = (): AccessInvalidationEvent => ({
  _tag: "WorkspaceChanged",
  workspaceId: makeWorkspaceId(uniqueId("ws"))
})

/** Every event `received` got so far, without waiting. */
const receivedSoFar = (received: Queue.Queue<AccessInvalidationEvent>) =>
  Effect.map(Queue.takeAll(received), Chunk.toArray)

/** The next event `received` gets within a second, if any. */
const nextWithinASecond = (received: Queue.Queue<AccessInvalidationEvent>) =>
  Queue.take(received).pipe(Effect.timeoutOption(Duration.seconds(1)))

export const accessInvalidationContract = (
  name: string,
  instance: Layer.Layer<AccessInvalidation>,
  options: AccessInvalidationContractOptions
) =>
  describe(`AccessInvalidation contract: ${name}`, () => {
    it.scopedLive("publish runs this instance's handlers, every one, before it returns", () =>
      Effect.gen(function* () {
        const invalidation = yield* instanceOf(instance)
        const first = yield* recorder(invalidation)
        const second = yield* recorder(invalidation)
        const events = [keyChanged(), workspaceChanged()]
        for (const event of events) yield* invalidation.publish(event)
        // No waiting: what publish delivers here is there when it returns.
        expect(yield* receivedSoFar(first)).toEqual(events)
        expect(yield* receivedSoFar(second)).toEqual(events)
      })
    )

    it.scopedLive("a handler runs once per registration, and no more once its scope closed", () =>
      Effect.gen(function* () {
        const invalidation = yield* instanceOf(instance)
        const calls: Array<string> = []
        const handler = (event: AccessInvalidationEvent) => Effect.sync(() => calls.push(event._tag))
        yield* invalidation.subscribe(handler)
        const temporary = yield* Scope.make()
        yield* Scope.extend(invalidation.subscribe(handler), temporary)

        yield* invalidation.publish(keyChanged())
        expect(calls).toEqual(["ApiKeyChanged", "ApiKeyChanged"])

        yield* Scope.close(temporary, Exit.void)
        yield* invalidation.publish(workspaceChanged())
        expect(calls).toEqual(["ApiKeyChanged", "ApiKeyChanged", "WorkspaceChanged"])
      })
    )

    if (!options.sharedTransport) return

    it.scopedLive("a publish on one instance reaches every other instance's handlers within a second", () =>
      Effect.gen(function* () {
        const publisher = yield* instanceOf(instance)
        const peers = [yield* instanceOf(instance), yield* instanceOf(instance)]
        const received = yield* Effect.forEach(peers, recorder)
        const events = [keyChanged(), workspaceChanged()]
        for (const event of events) {
          yield* publisher.publish(event)
          for (const queue of received) expect(yield* nextWithinASecond(queue)).toEqual(Option.some(event))
        }
      })
    )

    it.scopedLive("a peer whose handler's scope closed no longer gets the events; the others still do", () =>
      Effect.gen(function* () {
        const publisher = yield* instanceOf(instance)
        const peer = yield* instanceOf(instance)
        const staying = yield* recorder(peer)
        const leaving = yield* Queue.unbounded<AccessInvalidationEvent>()
        const temporary = yield* Scope.make()
        yield* Scope.extend(
          peer.subscribe((event) => Queue.offer(leaving, event)),
          temporary
        )
        yield* Scope.close(temporary, Exit.void)

        const event = keyChanged()
        yield* publisher.publish(event)
        expect(yield* nextWithinASecond(staying)).toEqual(Option.some(event))
        expect(yield* receivedSoFar(leaving)).toEqual([])
      })
    )
  })
