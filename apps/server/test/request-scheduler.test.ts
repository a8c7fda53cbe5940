/**
 * The scheduler of request fibers (scheduler.ts): a fiber resumed by a callback runs on in that
 * callback; what is scheduled while such a run is under way waits for the default
 * scheduler, so runs never nest and a yield still yields.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, FiberRef, Runtime } from "effect"
import { RequestScheduler } from "../src/scheduler.js"

const runOnRequestScheduler = Runtime.runCallback(
  Runtime.setFiberRef(Runtime.defaultRuntime, FiberRef.currentScheduler, new RequestScheduler())
)

/** An effect that waits for `release()`, called later by a test as a driver's callback would. */
const waiting = () => {
  let release: (value: number) => void = () => {}
  const effect = Effect.async<number>((resume) => {
    release = (value) => resume(Effect.succeed(value))
  })
  return { effect, release: (value: number) => release(value) }
}

describe("the request scheduler", () => {
  it("runs a resumed fiber on inside the callback that resumed it, to its end", () => {
    const answer = waiting()
    const seen: Array<string> = []
    runOnRequestScheduler(
      Effect.map(answer.effect, (value) => seen.push(`ran with ${value}`)),
      { onExit: (exit) => seen.push(`ended ${Exit.isSuccess(exit)}`) }
    )
    expect(seen).toEqual([])
    answer.release(7)
    seen.push("callback returned")
    expect(seen).toEqual(["ran with 7", "ended true", "callback returned"])
  })

  it("leaves a fiber resumed during another's run to the default scheduler: runs never nest", async () => {
    const first = waiting()
    const second = waiting()
    const seen: Array<string> = []
    runOnRequestScheduler(Effect.map(second.effect, () => seen.push("second ran")))
    runOnRequestScheduler(
      Effect.map(first.effect, () => {
        // Resumed while the first fiber's run is under way.
        second.release(2)
        seen.push("first ran")
      })
    )
    first.release(1)
    seen.push("callback returned")
    expect(seen).toEqual(["first ran", "callback returned"])
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(seen).toEqual(["first ran", "callback returned", "second ran"])
  })

  it("still yields: a fiber that yields lets the callback return before it goes on", async () => {
    const answer = waiting()
    const seen: Array<string> = []
    runOnRequestScheduler(
      Effect.zipRight(
        answer.effect,
        Effect.zipRight(
          Effect.sync(() => seen.push("before the yield")),
          Effect.zipRight(
            Effect.yieldNow(),
            Effect.sync(() => seen.push("after the yield"))
          )
        )
      )
    )
    answer.release(1)
    seen.push("callback returned")
    expect(seen).toEqual(["before the yield", "callback returned"])
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(seen).toEqual(["before the yield", "callback returned", "after the yield"])
  })
})
