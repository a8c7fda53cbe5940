/**
 * PGlite does not lock its data directory, and two processes writing one directory
 * lose rows silently. This lock file holds the owner's pid: a second owner fails
 * clearly while the first one lives, and a lock left by a dead process is taken over.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Data, Effect } from "effect"

export class DataDirectoryLocked extends Data.TaggedError("DataDirectoryLocked")<{
  readonly dataDir: string
  readonly pid: number
  readonly message: string
}> {}

export class DataDirectoryUnusable extends Data.TaggedError("DataDirectoryUnusable")<{
  readonly dataDir: string
  readonly message: string
  readonly cause: unknown
}> {}

const LOCK_FILE = "intake.lock"

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const tryCreate = (file: string): boolean => {
  try {
    Fs.writeFileSync(file, `${process.pid}\n`, { flag: "wx" })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
    throw error
  }
}

const holderOf = (file: string): number | null => {
  try {
    const pid = Number.parseInt(Fs.readFileSync(file, "utf8").trim(), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

/** Creates `dataDir` if missing and holds its lock until the scope closes. */
export const lockDataDirectory = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        Fs.mkdirSync(dataDir, { recursive: true })
        const file = Path.join(dataDir, LOCK_FILE)
        for (let attempt = 0; attempt < 3; attempt++) {
          if (tryCreate(file)) return { file, held: null }
          const pid = holderOf(file)
          if (pid !== null && isAlive(pid)) return { file, held: pid }
          // Stale: its owner is gone. Remove it and race for it like everyone else.
          Fs.rmSync(file, { force: true })
        }
        return { file, held: holderOf(file) ?? -1 }
      },
      catch: (cause) =>
        new DataDirectoryUnusable({
          dataDir,
          message: `Cannot use the data directory ${dataDir}: ${String(cause)}`,
          cause
        })
    }).pipe(
      Effect.flatMap(({ file, held }) =>
        held === null
          ? Effect.succeed(file)
          : Effect.fail(
              new DataDirectoryLocked({
                dataDir,
                pid: held,
                message: `The data directory ${Path.resolve(dataDir)} is in use by another Intake process (pid ${held}). Stop it, or set INTAKE_DATA_DIR to another directory.`
              })
            )
      )
    ),
    (file) =>
      Effect.sync(() => {
        if (holderOf(file) === process.pid) Fs.rmSync(file, { force: true })
      })
  )
