/**
 * Whether the database answers, as the process last saw it, and the one log line per change
 * of that answer: a warning with `database: "down"` when it stops answering, an info line
 * with `database: "up"` when it answers again. A watcher fiber pings it every few seconds,
 * so an outage is logged without anyone calling /readyz; /readyz asks through the same
 * state, so whichever notices a change first logs it and the other stays silent.
 */
import { Cause, Context, Duration, Effect, Exit, Layer, Ref } from "effect"

/** How often the watcher pings the database by default. */
export const DATABASE_WATCH_INTERVAL = Duration.seconds(5)

export class DatabaseState extends Context.Reference<DatabaseState>()("@intake/delivery/DatabaseState", {
  // A process without a database to lose (the in-memory store) always has one that answers.
  defaultValue: (): {
    /** Pings now, records the answer (logging a change) and tells whether the database answered. */
    readonly check: Effect.Effect<boolean>
  } => ({ check: Effect.succeed(true) })
}) {}

/** Connection strings with a password (`postgres://user:secret@host`, `password=secret`) masked. */
const withoutPasswords = (text: string) =>
  text.replace(/(\/\/[^/\s:@]*):[^@\s]*@/g, "$1:***@").replace(/(password\s*=\s*)[^\s&;]+/gi, "$1***")

/** The messages along an error's cause chain ("ping: connect ECONNREFUSED …"), without passwords. */
export const describeFailure = (error: unknown): string => {
  const parts: Array<string> = []
  let current = error
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    if (typeof current !== "object") {
      parts.push(String(current))
      break
    }
    const { message, operation, cause } = current as {
      message?: unknown
      operation?: unknown
      cause?: unknown
    }
    // StorageUnavailable's message is its fields as JSON; the operation that failed says it better.
    const own = typeof operation === "string" ? operation : message
    if (typeof own === "string" && own !== "" && !parts.includes(own)) parts.push(own)
    current = cause
  }
  return withoutPasswords(parts.length > 0 ? parts.join(": ") : String(error))
}

/**
 * The state over `ping`, which must fail (not hang) when the database does not answer.
 * The database is taken to answer at first: the process has just used it to migrate.
 */
export const makeDatabaseState = <E, R>(ping: Effect.Effect<void, E, R>) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<R>()
    const pinged = Effect.provide(ping, context)
    let started = 0
    // `ping` is the number of the check that last changed the state: an answer to an older
    // ping (a slow failure landing after a newer success) is stale and changes nothing.
    const state = yield* Ref.make({ up: true, ping: 0 })
    const check: Effect.Effect<boolean> = Effect.gen(function* () {
      const ping = ++started
      const exit = yield* Effect.exit(pinged)
      // Stopping (shutdown) is no answer from the database.
      if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
      const up = Exit.isSuccess(exit)
      const changed = yield* Ref.modify(state, (current) =>
        ping < current.ping ? [false, current] : [current.up !== up, { up, ping }]
      )
      if (changed) {
        yield* Exit.isSuccess(exit)
          ? Effect.logInfo({ message: "database answers again", database: "up" })
          : Effect.logWarning({
              message: "database does not answer",
              database: "down",
              error: describeFailure(Cause.squash(exit.cause))
            })
      }
      return up
    })
    return { check } satisfies DatabaseState["Type"]
  })

/**
 * DatabaseState over `ping`, with a fiber that checks it every `interval` (5 s by default)
 * for the layer's lifetime: it stops when the layer closes, before the pool it pings.
 */
export const watchDatabase = <E, R>(
  ping: Effect.Effect<void, E, R>,
  options: { readonly interval?: Duration.DurationInput } = {}
) =>
  Layer.scoped(
    DatabaseState,
    Effect.gen(function* () {
      const state = yield* makeDatabaseState(ping)
      const interval = options.interval ?? DATABASE_WATCH_INTERVAL
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(interval), state.check)))
      return state
    })
  )
