/**
 * The Redis connection the adapters share, owned by a scope: opened when the layer is
 * built, closed when its scope closes.
 *
 * Tuned to fail fast rather than wait: with Redis down, a command is refused at once
 * (no offline queue, no retry of a command whose connection dropped), so the domain's
 * fail-open cool-down takes over after one cheap failure instead of after its 3 s bound.
 * A connected Redis that stops answering is cut off by the command timeout, which each
 * adapter applies to its own wait: ioredis's timer per command is off, since it fires
 * late when the event loop is busy and fails a command whose answer already arrived (the
 * rate limiter counts on the store's time, rate-limiter.ts). The connection keeps
 * reconnecting in the background, so limits come back by themselves.
 */
import { Context, Effect, Layer, Runtime, type Scope } from "effect"
import { Cluster, Redis, type RedisOptions } from "ioredis"
import { configurationFault, makeRedisFaults, type RedisFaults } from "./faults.js"

/** A single Redis or a Redis Cluster: the commands the adapters use are the same on both. */
export type RedisClient = Redis | Cluster

export interface RedisSettings {
  /** redis://[user:password@]host:port[/db] (rediss:// for TLS). Ignored when `clusterNodes` is given. */
  readonly url: string
  /**
   * host:port of some nodes of a Redis Cluster (REDIS_CLUSTER_NODES): the client learns
   * the others from them and follows the cluster's redirections (docs/operations.md, Redis
   * Cluster).
   */
  readonly clusterNodes?: ReadonlyArray<string>
  /**
   * The credentials every node of the cluster asks for (REDIS_CLUSTER_PASSWORD and
   * REDIS_CLUSTER_USERNAME: `requirepass`, or an ACL user); one Redis takes them in its URL.
   */
  readonly clusterAuth?: { readonly username?: string; readonly password: string }
  /** Put before every key and channel name, so several deployments (or test runs) share one Redis. */
  readonly keyPrefix: string
  /** A command not answered by then fails (the domain treats the limiter as down); each adapter bounds its own wait by it. */
  readonly commandTimeoutMs: number
  /** A connection attempt not completed by then is dropped and retried. */
  readonly connectTimeoutMs: number
  /** The longest pause between reconnection attempts. */
  readonly maxReconnectDelayMs: number
}

export const defaultRedisSettings: Omit<RedisSettings, "url"> = {
  keyPrefix: "intake:",
  commandTimeoutMs: 3_000,
  connectTimeoutMs: 2_000,
  maxReconnectDelayMs: 1_000
}

export class RedisConnection extends Context.Tag("@intake/redis/RedisConnection")<
  RedisConnection,
  {
    readonly settings: RedisSettings
    /** For commands; never in subscriber mode. */
    readonly client: RedisClient
    /** A further connection with the same options (pub/sub needs one of its own), closed when the caller's scope closes. */
    readonly open: (name: string, overrides?: RedisOptions) => Effect.Effect<RedisClient, never, Scope.Scope>
    /** Answers PONG within the command timeout: for readiness checks. */
    readonly ping: Effect.Effect<boolean>
    /** Configuration faults (faults.ts): every adapter records its failures here, /readyz reads them. */
    readonly faults: RedisFaults
  }
>() {}

const optionsOf = (settings: RedisSettings): RedisOptions => ({
  // Connect in the background: a Redis that is down at start must not stop the server.
  lazyConnect: false,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  connectTimeout: settings.connectTimeoutMs,
  retryStrategy: (attempt) => Math.min(attempt * 100, settings.maxReconnectDelayMs)
})

/**
 * Opens a connection, logging its state changes once each (not every reconnection
 * attempt), and quits it when the scope closes.
 */
/**
 * A cluster client: the commands' options go to its connection to each node, and the
 * cluster-wide ones are as fail-fast (no offline queue while the slots are (re)learnt).
 * A redirection (MOVED, ASK: a failover, a resharding) is followed at once.
 */
const openCluster = (settings: RedisSettings, nodes: ReadonlyArray<string>, overrides: RedisOptions) => {
  const { enableOfflineQueue, ...redisOptions } = {
    ...optionsOf(settings),
    ...settings.clusterAuth,
    ...overrides
  }
  return new Cluster([...nodes], {
    redisOptions,
    enableOfflineQueue: enableOfflineQueue ?? false,
    enableReadyCheck: true,
    maxRedirections: 16,
    retryDelayOnMoved: 0,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: settings.connectTimeoutMs,
    clusterRetryStrategy: (attempt) => Math.min(attempt * 100, settings.maxReconnectDelayMs)
  })
}

const openConnection = (
  settings: RedisSettings,
  faults: RedisFaults,
  name: string,
  overrides: RedisOptions = {}
) =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const log = (effect: Effect.Effect<void>) =>
      Runtime.runFork(runtime)(effect.pipe(Effect.annotateLogs({ redis: name })))
    return yield* Effect.acquireRelease(
      Effect.sync((): RedisClient => {
        const client: RedisClient =
          settings.clusterNodes === undefined || settings.clusterNodes.length === 0
            ? new Redis(settings.url, { ...optionsOf(settings), ...overrides })
            : openCluster(settings, settings.clusterNodes, overrides)
        let state: "starting" | "up" | "down" = "starting"
        client.on("ready", () => {
          if (state === "down") log(Effect.logInfo("Redis connection restored"))
          state = "up"
        })
        // Without a listener ioredis prints every failed reconnection attempt.
        client.on("error", (error: Error) => {
          // A refused password is no outage: it is reported as a configuration fault.
          if (configurationFault(error) !== undefined) log(faults.record(error))
          if (state === "down") return
          state = "down"
          log(Effect.logWarning(`Redis connection failed: ${error.message}; reconnecting in the background`))
        })
        return client
      }),
      (client) =>
        Effect.promise(() => client.quit().catch(() => "closed")).pipe(
          // A release runs uninterruptibly: only an interruptible wait can be cut by the bound.
          Effect.interruptible,
          Effect.timeout(settings.commandTimeoutMs),
          Effect.ignore,
          Effect.ensuring(Effect.sync(() => client.disconnect()))
        )
    )
  })

/** What of ioredis's socket writeTogether uses (ioredis keeps it as `stream`, not in its types). */
interface CorkableStream {
  cork(): void
  uncork(): void
}

/**
 * Makes the commands sent on `client` in one turn of the event loop leave in one write
 * (docs/performance.md, The request path). Call the function it answers before each
 * command: the first call of a turn corks the connection's socket, and the socket is
 * uncorked once the turn's I/O callbacks have run (`setImmediate`), which writes what the
 * turn queued in one system call. Under load a turn reads many requests, each with its
 * rate-limit check: one write each cost a system call and a wake-up of Redis per request.
 * A command waits at most for the rest of its turn (a pending immediate keeps the loop from
 * blocking on I/O). A cluster client has no one socket: its commands leave as they come.
 * A socket replaced by a reconnection is not corked: the old one is
 * uncorked, the new one corked by the next command.
 */
export const writeTogether = (client: RedisClient): (() => void) => {
  let corked = false
  return () => {
    if (corked) return
    const stream = (client as unknown as { readonly stream?: CorkableStream }).stream
    if (stream === undefined) return
    corked = true
    stream.cork()
    setImmediate(() => {
      corked = false
      stream.uncork()
    })
  }
}

/**
 * The shared connection. `settings.url` is required (it may be empty with `clusterNodes`);
 * the rest default to defaultRedisSettings.
 */
export const RedisConnectionLive = (settings: Partial<RedisSettings> & Pick<RedisSettings, "url">) =>
  Layer.scoped(
    RedisConnection,
    Effect.gen(function* () {
      const complete: RedisSettings = { ...defaultRedisSettings, ...settings }
      const faults = makeRedisFaults()
      const client = yield* openConnection(complete, faults, "commands")
      // Commands are not queued while connecting: wait for the connection once, boundedly.
      const ready = yield* Effect.async<boolean>((resume) => {
        if (client.status === "ready") return resume(Effect.succeed(true))
        const onReady = () => resume(Effect.succeed(true))
        client.once("ready", onReady)
        return Effect.sync(() => client.off("ready", onReady))
      }).pipe(
        Effect.timeoutTo({
          duration: complete.connectTimeoutMs,
          onSuccess: () => true,
          onTimeout: () => false
        })
      )
      if (!ready)
        yield* Effect.logWarning(
          `Redis not ready after ${complete.connectTimeoutMs} ms: starting without it; rate limits fail open until it answers`
        )
      return {
        settings: complete,
        client,
        open: (name, overrides) => openConnection(complete, faults, name, overrides),
        faults,
        ping: Effect.tryPromise(() => client.ping()).pipe(
          Effect.interruptible,
          Effect.map((answer) => answer === "PONG"),
          Effect.timeout(complete.commandTimeoutMs),
          Effect.orElseSucceed(() => false)
        )
      }
    })
  )
