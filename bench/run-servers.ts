/**
 * The processes `pnpm bench` (run.ts) measures: Intake as `pnpm start` runs it, with the
 * round-trip counters loaded, and the bare node:http server beside it; their memory, and the
 * CPU of the PostgreSQL backends serving a database.
 */
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { type AddressInfo, createServer } from "node:net"
import { join } from "node:path"
import { cpuMicros } from "./process-cpu.js"
import type { RoundTripCounts } from "./round-trips.js"

/** The repository, and its tsx (the benchmarks are TypeScript). */
export const root = join(import.meta.dirname, "..")
export const tsx = join(root, "node_modules/.bin/tsx")
/** The operator token of the servers this run starts (docs/rules.md, Operator API). */
export const ADMIN_TOKEN = randomUUID()

export const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
  })

export const stop = async (child: ChildProcess) => {
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
  child.kill("SIGTERM")
  await exited(child)
  clearTimeout(timer)
}

/** Peak resident set size of a running process, in MB (Linux; NaN elsewhere). */
export const peakRssMb = (pid: number | undefined) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1])
    return Math.round(kb / 1024)
  } catch {
    return Number.NaN
  }
}

/**
 * CPU time so far of each PostgreSQL backend on this machine that serves `database` (its
 * process title names the database), by pid. On a machine of two cores the database's CPU
 * is taken from the same cores as the server's, so it decides throughput as much.
 */
export const databaseBackendsCpu = (database: string) => {
  const backends = new Map<number, number>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, "utf8")
      if (!title.startsWith("postgres: ") || !title.split(/[\s\0]+/).includes(database)) continue
      const micros = cpuMicros(Number(entry))
      // A backend that ended between the two reads has no CPU figure: it is left out, not NaN.
      if (!Number.isNaN(micros)) backends.set(Number(entry), micros)
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return backends
}

/** CPU the backends of `database` used between two readings (a backend that started meanwhile counts whole). */
export const databaseCpuSince = (before: ReadonlyMap<number, number>, database: string) => {
  const after = databaseBackendsCpu(database)
  if (after.size === 0) return Number.NaN
  let used = 0
  for (const [pid, micros] of after) used += micros - (before.get(pid) ?? 0)
  return used
}

/** The bare node:http baseline, answering `bytes`-byte JSON bodies. */
export const startBareServer = (bytes: number) =>
  new Promise<{ child: ChildProcess; url: string }>((resolve, reject) => {
    const child = spawn(tsx, [join(root, "bench/bare-server.ts")], {
      env: { ...process.env, BODY_BYTES: String(bytes) },
      stdio: ["ignore", "pipe", "inherit"]
    })
    child.once("exit", (code) => reject(new Error(`bare server exited with ${code}`)))
    child.stdout?.once("data", (chunk: Buffer) =>
      resolve({ child, url: `http://127.0.0.1:${Number(chunk.toString().trim())}` })
    )
  })

export interface IntakeServer {
  readonly child: ChildProcess
  readonly baseUrl: string
  readonly roundTrips: () => Promise<Record<string, RoundTripCounts>>
  readonly resetRoundTrips: () => Promise<void>
}

export const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const port = (probe.address() as AddressInfo).port
      probe.close(() => resolve(port))
    })
  })

/** The server built as `pnpm start` builds it (apps/server/build.mjs), once per run. */
let built: string | undefined
export const builtServer = () => {
  if (built === undefined) {
    execFileSync(process.execPath, [join(root, "apps/server/build.mjs")], { stdio: "inherit" })
    built = join(root, "apps/server/dist/main.js")
  }
  return built
}

/** Intake itself, as `pnpm start` runs it, with the round-trip counters loaded (through tsx: they are TypeScript). */
export const startIntake = async (env: Record<string, string>): Promise<IntakeServer> => {
  const port = await freePort()
  const child = fork(builtServer(), [], {
    cwd: join(root, "apps/server"),
    execArgv: ["--import", "tsx", "--import", join(root, "bench/round-trips.ts")],
    env: {
      PATH: process.env.PATH ?? "",
      // Nothing balances load here: a stopped server need not drain.
      INTAKE_SHUTDOWN_DRAIN: "0s",
      PORT: String(port),
      INTAKE_ADMIN_TOKEN: ADMIN_TOKEN,
      ...env
    },
    // Request logs stay on (as in production) and go nowhere.
    stdio: ["ignore", "ignore", "inherit", "ipc"]
  })
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode} at start`)
    if (Date.now() > deadline) throw new Error("the server did not answer /healthz within 120 s")
    const healthy = await fetch(`${baseUrl}/healthz`).then(
      (response) => response.ok,
      () => false
    )
    if (healthy) break
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  const ask = <A>(type: string, answer: string) =>
    new Promise<A>((resolve) => {
      const listener = (message: { type: string; counts?: A }) => {
        if (message.type !== answer) return
        child.off("message", listener)
        resolve(message.counts as A)
      }
      child.on("message", listener)
      child.send({ type })
    })
  return {
    child,
    baseUrl,
    roundTrips: () => ask("round-trips:read", "round-trips"),
    resetRoundTrips: () => ask("round-trips:reset", "round-trips:reset")
  }
}
