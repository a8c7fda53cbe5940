/**
 * Effect adds every root fiber (in the server, each request's) to one process-wide `Set`
 * and deletes it when the fiber ends (its global fiber scope; read only by `Fiber.roots`,
 * which nothing in Intake calls). Under load, with that set, young-generation collections
 * kept ended fibers alive, and with them what they hold (the request, its answer), and
 * promoted them to the old generation, where only a full collection frees them; with the
 * same fibers kept in an array instead, or not kept, they died young (docs/performance.md,
 * "Memory and garbage collection", has the figures; why V8 keeps them through this set, and not
 * plain objects through a set in a loop, we did not establish).
 *
 * `untrackRootFibers` gives that scope a set that keeps no fiber. `Fiber.roots` then lists
 * none in this process; fibers run, end and are interrupted exactly as before.
 */
// Evaluates Effect's modules, its global fiber scope among them, before the store is read.
import "effect"

/** Where `globalValue` keeps its values, and the key of the global fiber scope (effect 3.x). */
const GLOBAL_STORE = "effect/GlobalValue"
const GLOBAL_FIBER_SCOPE = Symbol.for("effect/FiberScope/Global")

/** What Effect does with its `roots`: add a fiber, delete it, list them (`Fiber.roots`). */
const rootsKeptNowhere = {
  add: () => rootsKeptNowhere,
  delete: () => false,
  [Symbol.iterator]: (): Iterator<never> => [][Symbol.iterator]()
}

/**
 * Replaces the roots set of Effect's global fiber scope with one that keeps nothing.
 * Answers whether it found that scope as this module knows it: false after an Effect
 * release that keeps its roots elsewhere (the test then fails, and nothing is changed).
 */
export const untrackRootFibers = (): boolean => {
  const store = (globalThis as Record<string, unknown>)[GLOBAL_STORE]
  if (!(store instanceof Map)) return false
  const scope: unknown = store.get(GLOBAL_FIBER_SCOPE)
  if (typeof scope !== "object" || scope === null || !("roots" in scope)) return false
  if (scope.roots === rootsKeptNowhere) return true
  if (!(scope.roots instanceof Set)) return false
  scope.roots = rootsKeptNowhere
  return true
}
