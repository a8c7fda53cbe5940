/**
 * The test options of a project whose files share their worker's module graph
 * (docs/testing.md, "Tests"): effect, @effect/platform and the packages load once per
 * worker instead of once per file, which was most of such a project's time. The root
 * config turns isolation off and runs two workers; `vitest-setup.ts` gives each file a
 * fresh `it` from @effect/vitest.
 * A project takes it only where its files pass in any order sharing a process (no global
 * they set and leave, no module state one file relies on being fresh).
 */
import { fileURLToPath } from "node:url"

export const sharedModules = {
  poolOptions: { forks: { isolate: false } },
  setupFiles: [fileURLToPath(new URL("./vitest-setup.ts", import.meta.url))]
}
