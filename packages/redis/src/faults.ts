/**
 * Configuration faults: Redis answered, but with an error no retry will cure
 * (docs/operations.md, Redis faults). A time-out or a refused connection is Redis being
 * unavailable, which the
 * limiter rides out by failing open; MOVED (a cluster node addressed as a single Redis),
 * WRONGTYPE (a key of ours holding something else), NOAUTH or WRONGPASS (a wrong password),
 * NOSCRIPT that the script's reload did not cure, and any other error reply are faults of
 * the deployment. They still fail open (the limiter's contract), but loudly: logged as an
 * error with its cause at most once a minute, counted, and shown by /readyz for a minute
 * after the last one.
 */
import { Cause, Clock, Effect, Option } from "effect"

/** Error replies that mean "not now" rather than "never": Redis loads, is busy, or the cluster moves. */
const TRANSIENT = new Set(["LOADING", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN"])

/** What an operator reads in /readyz for each kind of fault; the server's addresses stay in the logs. */
const REASONS: Readonly<Record<string, string>> = {
  MOVED:
    "Redis answered MOVED: it is a node of a Redis Cluster; list the cluster's nodes in REDIS_CLUSTER_NODES instead of REDIS_URL",
  ASK: "Redis answered ASK: it is a node of a Redis Cluster; list the cluster's nodes in REDIS_CLUSTER_NODES instead of REDIS_URL",
  WRONGTYPE: "a rate-limit key holds another type of value: something else writes under REDIS_KEY_PREFIX",
  NOAUTH: "Redis requires a password: give it in REDIS_URL (one Redis) or REDIS_CLUSTER_PASSWORD (a cluster)",
  WRONGPASS:
    "Redis refused the user or password of REDIS_URL (one Redis) or REDIS_CLUSTER_USERNAME and REDIS_CLUSTER_PASSWORD (a cluster)",
  NOPERM: "the Redis user of REDIS_URL or REDIS_CLUSTER_USERNAME may not run the commands Intake needs",
  NOSCRIPT: "Redis lost the rate-limit script and reloading it did not help"
}

/** The first word of an error reply ("MOVED 3999 10.0.0.1:6379" → "MOVED"). */
const replyCode = (error: unknown): string | undefined => {
  if (!(error instanceof Error)) return undefined
  // A cluster client that could learn no node's slots (ClusterAllFailedError) carries the
  // last node's answer: a refused password shows there, not in its own message.
  if ("lastNodeError" in error && error.lastNodeError !== undefined) return replyCode(error.lastNodeError)
  // ioredis's ReplyError (the parser's); a connection's own failures are plain Errors.
  if (error.name !== "ReplyError") return undefined
  return /^[A-Z][A-Z_-]*/.exec(error.message)?.[0] ?? "ERR"
}

/** The fault's code when `error` is a configuration fault; undefined for unavailability (or anything else). */
export const configurationFault = (error: unknown): string | undefined => {
  const code = replyCode(error)
  return code === undefined || TRANSIENT.has(code) ? undefined : code
}

export interface RedisFault {
  /** The reply's first word: MOVED, WRONGTYPE, WRONGPASS… */
  readonly code: string
  /** What to fix, without addresses or key names. */
  readonly reason: string
  /** Faults recorded since the process started. */
  readonly count: number
  /** Epoch ms of the last one. */
  readonly lastAt: number
}

/** How long a fault is shown after the last one, and the least time between two log lines. */
export const FAULT_WINDOW_MS = 60_000

export interface RedisFaults {
  /** Records `error` when it is a configuration fault (and logs it, once a minute); nothing otherwise. */
  readonly record: (error: unknown) => Effect.Effect<void>
  /** The last fault, while it is less than a minute old. */
  readonly recent: Effect.Effect<Option.Option<RedisFault>>
  /** Faults recorded since the process started, however old: for a metrics counter. */
  readonly total: Effect.Effect<number>
}

export const makeRedisFaults = (): RedisFaults => {
  let last: RedisFault | undefined
  let loggedAt = Number.NEGATIVE_INFINITY
  let unlogged = 0
  return {
    record: (error) =>
      Effect.gen(function* () {
        const code = configurationFault(error)
        if (code === undefined) return
        const now = yield* Clock.currentTimeMillis
        const reason = REASONS[code] ?? `Redis refused a command with ${code}`
        last = { code, reason, count: (last?.count ?? 0) + 1, lastAt: now }
        unlogged += 1
        if (now - loggedAt < FAULT_WINDOW_MS) return
        const times = unlogged === 1 ? "" : ` (${unlogged} times since the last report)`
        loggedAt = now
        unlogged = 0
        yield* Effect.logError(
          `Redis configuration fault ${code}${times}: ${reason}. Rate limits fail open until it is fixed (docs/operations.md, Redis faults)`,
          Cause.fail(error)
        )
      }),
    recent: Effect.map(Clock.currentTimeMillis, (now) =>
      last !== undefined && now - last.lastAt < FAULT_WINDOW_MS ? Option.some(last) : Option.none()
    ),
    total: Effect.sync(() => last?.count ?? 0)
  }
}
