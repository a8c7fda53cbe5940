/** A directory of a test's own under the system's temporary folder. */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"

/** A fresh directory named `prefix…`, removed with everything in it when the scope closes. */
export const temporaryDirectory = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )
