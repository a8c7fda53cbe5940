/**
 * Run before each test file of the projects whose files share one module graph
 * (`isolate: false`, docs/testing.md). @effect/vitest's `layer(...)` assigns its own
 * `effect`, `scoped`, `layer`, `prop` and `flakyTest` onto the `it` every file imports
 * (@effect/vitest 0.30, internal `makeIt`), so after a file that calls `layer(...)`, the
 * next file's top-level `it.effect` would run inside that file's layer, its TestClock
 * shared between tests. Each file starts again from @effect/vitest's own methods, as it
 * does in a fresh module graph.
 */
import * as EffectVitest from "@effect/vitest"

Object.assign(EffectVitest.it, {
  effect: EffectVitest.effect,
  scoped: EffectVitest.scoped,
  live: EffectVitest.live,
  scopedLive: EffectVitest.scopedLive,
  flakyTest: EffectVitest.flakyTest,
  layer: EffectVitest.layer,
  prop: EffectVitest.prop
})
