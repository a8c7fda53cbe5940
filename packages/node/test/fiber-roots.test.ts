/**
 * untrackRootFibers: Effect's global set of root fibers is found and replaced by one that
 * keeps no fiber, and fibers still run, end and are interrupted as before.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Runtime } from "effect"
import { untrackRootFibers } from "../src/fiber-roots.js"

/** A root fiber (as the server forks one per request) waiting on `gate`, and its exit once ended. */
const rootFiberAwaiting = (gate: Deferred.Deferred<string>) => {
  let exit: Exit.Exit<string> | undefined
  const cancel = Runtime.runCallback(Runtime.defaultRuntime)(Deferred.await(gate), {
    onExit: (ended) => {
      exit = ended
    }
  })
  return { cancel, exit: () => exit }
}

describe("untrackRootFibers", () => {
  it.effect("finds Effect's root set (which lists a running root fiber), and then keeps none", () =>
    Effect.gen(function* () {
      const before = yield* Deferred.make<string>()
      const tracked = rootFiberAwaiting(before)
      // What this module relies on: Effect 3 keeps running root fibers in its global scope.
      expect((yield* Fiber.roots).length).toBeGreaterThan(0)
      yield* Deferred.succeed(before, "done")

      expect(untrackRootFibers()).toBe(true)
      // Idempotent: a second server in the same process finds it replaced already.
      expect(untrackRootFibers()).toBe(true)

      const gate = yield* Deferred.make<string>()
      const running = rootFiberAwaiting(gate)
      expect(yield* Fiber.roots).toEqual([])
      yield* Deferred.succeed(gate, "answered")
      yield* Effect.yieldNow()
      expect(running.exit()).toEqual(Exit.succeed("answered"))
      expect(tracked.exit()).toEqual(Exit.succeed("done"))
    })
  )

  it.effect("leaves interruption of an untracked root fiber as it was", () =>
    Effect.gen(function* () {
      expect(untrackRootFibers()).toBe(true)
      const gate = yield* Deferred.make<string>()
      const running = rootFiberAwaiting(gate)
      running.cancel()
      yield* Effect.yieldNow()
      const exit = running.exit()
      expect(exit !== undefined && Exit.isInterrupted(exit)).toBe(true)
    })
  )
})
