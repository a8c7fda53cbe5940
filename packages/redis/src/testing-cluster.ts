/**
 * A Redis Cluster of the tests' own: three masters with one replica each, six
 * redis-server processes on loopback ports chosen here, each in a temporary directory and
 * persisting nothing. Where redis-server or redis-cli is missing the suite is skipped with
 * a message, except under CI=true, where that fails the run.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process"
import net from "node:net"
import { describe, it } from "@effect/vitest"
import { temporaryDirectory } from "@intake/testing"
import { Effect, Schedule } from "effect"

const installed = (command: string) => spawnSync(command, ["--version"], { stdio: "ignore" }).status === 0
const missing = ["redis-server", "redis-cli"].filter((command) => !installed(command))
if (missing.length > 0 && process.env.CI === "true") {
  throw new Error(
    `CI=true: the Redis Cluster tests need ${missing.join(" and ")} (Debian: apt-get install redis-server)`
  )
}

/** Declares `suite` when redis-server and redis-cli are installed; otherwise skips it, saying why. */
export const withRedisCluster = (name: string, suite: () => void) => {
  if (missing.length === 0) suite()
  else
    describe.skip(`${name} (skipped: ${missing.join(" and ")} not installed)`, () => {
      it("needs redis-server and redis-cli", () => {})
    })
}

/** redis-cli's answer, trimmed; fails with its error output. */
export const redisCli = (port: number, ...args: ReadonlyArray<string>) =>
  authenticatedCli(undefined, port, ...args)

/** redis-cli with the nodes' password, when they ask for one. */
const authenticatedCli = (password: string | undefined, port: number, ...args: ReadonlyArray<string>) =>
  Effect.async<string, Error>((resume) => {
    execFile(
      "redis-cli",
      [
        "-h",
        "127.0.0.1",
        "-p",
        String(port),
        ...(password === undefined ? [] : ["-a", password, "--no-auth-warning"]),
        ...args
      ],
      { timeout: 30_000 },
      (error, stdout, stderr) =>
        resume(
          error === null
            ? Effect.succeed(stdout.trim())
            : Effect.fail(new Error(`${error.message}\n${stderr}`))
        )
    )
  })

const portIsFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = net.createServer()
    probe.once("error", () => resolve(false))
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)))
  })

/** Six ports whose cluster bus ports (port + 10000) are free as well. */
const freePorts = Effect.promise(async () => {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000)
    const ports = Array.from({ length: 6 }, (_, i) => base + i)
    const free = await Promise.all(ports.flatMap((port) => [portIsFree(port), portIsFree(port + 10_000)]))
    if (free.every(Boolean)) return ports
  }
  throw new Error("no six free ports (and bus ports) found")
})

/** Polls `check` every 100 ms until it holds, for at most `withinMs`. */
export const waitUntil = (what: string, check: Effect.Effect<boolean>, withinMs = 20_000) =>
  check.pipe(
    Effect.repeat({ until: (done) => done, schedule: Schedule.spaced("100 millis") }),
    Effect.timeoutFail({
      duration: withinMs,
      onTimeout: () => new Error(`${what}: not within ${withinMs} ms`)
    }),
    Effect.orDie,
    Effect.asVoid
  )

export interface RedisCluster {
  readonly ports: ReadonlyArray<number>
  /** REDIS_CLUSTER_NODES for it. */
  readonly nodes: string
  /** The port of the master serving `key`'s slot, and of its replica. */
  readonly shardOf: (key: string) => Effect.Effect<{ readonly master: number; readonly replica: number }>
  /**
   * Promotes the replica of `key`'s master (CLUSTER FAILOVER: the master hands over once
   * the replica has every write) and waits until every node agrees.
   */
  readonly failover: (key: string) => Effect.Effect<{ readonly master: number; readonly replica: number }>
}

export interface RedisClusterOptions {
  /** Every node asks for it (`requirepass`), and replicas give it to their master (`masterauth`). */
  readonly password?: string
}

/**
 * Starts the cluster for the scope; every process is killed and every directory removed when
 * it closes.
 */
export const startRedisClusterWith = (options: RedisClusterOptions) =>
  Effect.gen(function* () {
    const cli = (port: number, ...args: ReadonlyArray<string>) =>
      authenticatedCli(options.password, port, ...args)
    const answers = (port: number, ...args: ReadonlyArray<string>) =>
      Effect.orElseSucceed(cli(port, ...args), () => "")
    const clusterIsOk = (ports: ReadonlyArray<number>) =>
      Effect.map(
        Effect.forEach(ports, (port) => answers(port, "CLUSTER", "INFO")),
        (infos) => infos.every((info) => info.includes("cluster_state:ok"))
      )
    const ports = yield* freePorts
    yield* Effect.forEach(ports, (port) =>
      Effect.gen(function* () {
        const dir = yield* temporaryDirectory("intake-redis-cluster-")
        yield* Effect.acquireRelease(
          Effect.sync(() =>
            spawn(
              "redis-server",
              [
                "--port",
                String(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                dir,
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
                "--save",
                "",
                "--appendonly",
                "no",
                ...(options.password === undefined
                  ? []
                  : ["--requirepass", options.password, "--masterauth", options.password])
              ],
              { stdio: "ignore" }
            )
          ),
          (child: ChildProcess) =>
            Effect.async<void>((resume) => {
              if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
              child.once("exit", () => resume(Effect.void))
              child.kill("SIGKILL")
            })
        )
        yield* waitUntil(
          `redis-server on ${port}`,
          Effect.map(answers(port, "PING"), (answer) => answer === "PONG")
        )
      })
    )
    yield* cli(
      ports[0]!,
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      "1",
      "--cluster-yes"
    ).pipe(Effect.orDie)
    yield* waitUntil("cluster_state:ok on every node", clusterIsOk(ports))

    const shardOf = (key: string) =>
      Effect.gen(function* () {
        const slot = Number(yield* answers(ports[0]!, "CLUSTER", "KEYSLOT", key))
        // CLUSTER NODES: <id> <host:port@bus> <flags> <master id or -> … <slot ranges>
        const lines = (yield* answers(ports[0]!, "CLUSTER", "NODES"))
          .split("\n")
          .map((line) => line.split(" "))
        const portOf = (fields: ReadonlyArray<string>) => Number(/:(\d+)@/.exec(fields[1] ?? "")?.[1])
        const master = lines.find(
          (fields) =>
            fields[2]?.includes("master") &&
            fields.slice(8).some((range) => {
              const [from, to = from] = range.split("-").map(Number)
              return from !== undefined && slot >= from && slot <= to!
            })
        )
        const replica = lines.find((fields) => fields[3] === master?.[0])
        if (master === undefined || replica === undefined)
          return yield* Effect.dieMessage(`no shard for slot ${slot}`)
        return { master: portOf(master), replica: portOf(replica) }
      })

    return {
      ports,
      nodes: ports.map((port) => `127.0.0.1:${port}`).join(","),
      shardOf,
      failover: (key) =>
        Effect.gen(function* () {
          const { master, replica } = yield* shardOf(key)
          yield* cli(replica, "CLUSTER", "FAILOVER").pipe(Effect.orDie)
          const roleIs = (port: number, role: string) =>
            Effect.map(answers(port, "ROLE"), (answer) => answer.split("\n")[0] === role)
          yield* waitUntil("the replica promoted", roleIs(replica, "master"))
          yield* waitUntil("the old master demoted", roleIs(master, "slave"))
          yield* waitUntil("cluster_state:ok on every node", clusterIsOk(ports))
          return { master: replica, replica: master }
        })
    } satisfies RedisCluster
  })

/** A cluster whose nodes ask for no password. */
export const startRedisCluster = startRedisClusterWith({})
