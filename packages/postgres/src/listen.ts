/**
 * LISTEN on PostgreSQL that survives its connection. @effect/sql-pg's `listen` keeps one
 * connection and ignores its errors: once PostgreSQL restarts or the backend is
 * terminated, notifications stop for good and nothing says so. Here each subscription
 * has a connection of its own whose error or end fails it, and is opened again with
 * backoff (0.1 s, doubling, at most 5 s); the loss and the return are logged once each.
 */
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Schedule, Stream } from "effect"
import { Client, type ClientConfig, escapeIdentifier } from "pg"

/** From 0.1 s, doubling, at most 5 s between tries; reset once a notification passes again. */
const RELISTEN = Schedule.union(Schedule.exponential("100 millis"), Schedule.spaced("5 seconds"))

/** One connection's notifications on `channel`; fails when the connection errors or ends. */
const listenOnce = (options: ClientConfig, channel: string, onListening: Effect.Effect<void>) =>
  Stream.asyncScoped<string, SqlError>((emit) =>
    Effect.gen(function* () {
      const client = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: async () => {
            const client = new Client(options)
            // An error event unheard would crash the process; the handlers below report it.
            client.on("error", () => {})
            await client.connect()
            return client
          },
          catch: (cause) => new SqlError({ cause, message: `Failed to connect to LISTEN ${channel}` })
        }),
        (client) =>
          Effect.promise(() => client.end().catch(() => undefined)).pipe(
            Effect.interruptible,
            Effect.timeoutOption(1_000)
          )
      )
      const lost = (cause: unknown) => {
        void emit.fail(new SqlError({ cause, message: `The connection of LISTEN ${channel} was lost` }))
      }
      client.on("error", lost)
      client.on("end", () => lost(new Error("the connection ended")))
      client.on("notification", (message) => {
        if (message.channel === channel && message.payload) void emit.single(message.payload)
      })
      yield* Effect.tryPromise({
        try: () => client.query(`LISTEN ${escapeIdentifier(channel)}`),
        catch: (cause) => new SqlError({ cause, message: `Failed to LISTEN ${channel}` })
      })
      yield* onListening
    })
  )

/** `PgClient.listen` on connections of its own (`options`), reconnecting; the stream never fails. */
export const reconnectingListen =
  (options: ClientConfig) =>
  (channel: string): Stream.Stream<string, SqlError> => {
    let down = false
    const back = Effect.suspend(() => {
      if (!down) return Effect.void
      down = false
      return Effect.logInfo(`LISTEN ${channel}: listening again`)
    })
    return listenOnce(options, channel, back).pipe(
      Stream.tapErrorCause((cause) => {
        if (down) return Effect.void
        down = true
        return Effect.logWarning(
          `LISTEN ${channel}: connection lost; notifications missed until it is back (trying again with backoff)`,
          cause
        )
      }),
      Stream.retry(RELISTEN)
    )
  }
