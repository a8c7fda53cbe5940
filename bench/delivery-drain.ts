/**
 * `pnpm bench:delivery --drain`: a backlog drain. BENCH_DRAIN_DELIVERIES (20,000) attempts
 * queued at once over BENCH_DRAIN_WORKSPACES (20) workspaces of BENCH_DRAIN_ENDPOINTS (5)
 * endpoints each, all due, sent by BENCH_DISPATCHERS (1) dispatcher processes
 * (bench/drain-dispatcher.ts) to a receiver answering 204 at once in a process of its own
 * (bench/drain-receiver.mjs), all on 127.0.0.1. On PostgreSQL (DATABASE_URL: a fresh
 * database is made on that server and dropped after) or, without it, on an in-memory PGlite
 * in the one dispatcher process. Prints deliveries per second, CPU per delivery by process
 * (each dispatcher, PostgreSQL's backends serving the bench's database, the receiver, which
 * is not counted in the stack), deliveries per core-second of the stack (dispatchers +
 * PostgreSQL) and statements per delivery (counted at the driver).
 */
import { type ChildProcess, execFileSync, fork } from "node:child_process"
import { join } from "node:path"
import { freshDatabaseUrl } from "@intake/postgres/testing"
import { Duration, Effect } from "effect"
import type { DrainMessage } from "./drain-dispatcher.js"
import { cpuMicros } from "./process-cpu.js"

const DELIVERIES = Number(process.env.BENCH_DRAIN_DELIVERIES ?? 20_000)
const WORKSPACES = Number(process.env.BENCH_DRAIN_WORKSPACES ?? 20)
const ENDPOINTS = Number(process.env.BENCH_DRAIN_ENDPOINTS ?? 5)
const DISPATCHERS = Number(process.env.BENCH_DISPATCHERS ?? 1)
const serverUrl = process.env.DATABASE_URL
const here = import.meta.dirname

/** A child process and the next message of a given type it sends. */
const child = (process: ChildProcess) => ({
  process,
  next: <T extends { type: string }>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`child exited (${code}) before "${type}"`))
      const onMessage = (message: T) => {
        if (message.type !== type) return
        process.off("message", onMessage)
        process.off("exit", onExit)
        resolve(message)
      }
      process.on("message", onMessage)
      process.once("exit", onExit)
    }),
  send: (message: DrainMessage | { type: "read" }) => process.send(message)
})

/** PostgreSQL's backends connected to the bench's database (psql's own excluded): where its work costs there. */
const backendPids = (databaseUrl: string | undefined): ReadonlyArray<number> =>
  databaseUrl === undefined
    ? []
    : execFileSync(
        "psql",
        [
          databaseUrl,
          "-Atc",
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ],
        { encoding: "utf8" }
      )
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map(Number)

const drain = (databaseUrl: string | undefined) =>
  Effect.gen(function* () {
    const receiver = child(fork(join(here, "drain-receiver.mjs"), [], { stdio: "inherit" }))
    const { port } = yield* Effect.promise(() => receiver.next<{ type: string; port: number }>("listening"))
    const dispatchers = Array.from({ length: databaseUrl === undefined ? 1 : DISPATCHERS }, () =>
      child(
        // Through node's own --import (not tsx's wrapper process), so the pid is the dispatcher's.
        fork(join(here, "drain-dispatcher.ts"), [], {
          execArgv: [
            "--import",
            "tsx",
            // BENCH_CPU_PROF=DIR: a V8 CPU profile of each dispatcher, written to DIR when it exits.
            ...(process.env.BENCH_CPU_PROF === undefined
              ? []
              : ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`])
          ],
          stdio: "inherit",
          env: {
            ...process.env,
            ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
            LOG_LEVEL: "warn"
          }
        })
      )
    )
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        // Disconnecting lets a child exit by itself (bench/drain-*.{ts,mjs}), so a CPU profile is written.
        for (const c of [receiver, ...dispatchers]) c.process.disconnect()
      })
    )
    yield* Effect.promise(() => Promise.all(dispatchers.map((d) => d.next("ready"))))
    const perWorkspace = Math.ceil(DELIVERIES / (WORKSPACES * ENDPOINTS))
    const expected = perWorkspace * WORKSPACES * ENDPOINTS
    const seeding = dispatchers[0]!.next("seeded")
    dispatchers[0]!.send({
      type: "seed",
      receiverUrl: `http://127.0.0.1:${port}`,
      workspaces: WORKSPACES,
      endpointsPerWorkspace: ENDPOINTS,
      eventsPerWorkspace: perWorkspace
    })
    yield* Effect.promise(() => seeding)

    const pgCpu = () => new Map(backendPids(databaseUrl).map((pid) => [pid, cpuMicros(pid) || 0]))
    const pgBefore = pgCpu()
    const cpuBefore = dispatchers.map((d) => cpuMicros(d.process.pid))
    const receiverBefore = cpuMicros(receiver.process.pid)
    const started = Date.now()
    for (const d of dispatchers) d.send({ type: "go" })

    const read = () => {
      const answer = receiver.next<{ type: string; received: number; duplicates: number }>("received")
      receiver.send({ type: "read" })
      return answer
    }
    let arrived = { received: 0, duplicates: 0 }
    const deadline = started + 10 * 60_000
    while (arrived.received < expected && Date.now() < deadline) {
      yield* Effect.sleep(Duration.millis(50))
      arrived = yield* Effect.promise(read)
    }
    const seconds = (Date.now() - started) / 1000
    const cpuAfter = dispatchers.map((d) => cpuMicros(d.process.pid))
    const receiverCpu = cpuMicros(receiver.process.pid) - receiverBefore
    // Backends that came up during the drain (a pool growing) count from zero.
    let pgCost = 0
    for (const [pid, micros] of pgCpu()) pgCost += micros - (pgBefore.get(pid) ?? 0)
    const statements = yield* Effect.promise(() =>
      Promise.all(
        dispatchers.map((d) => {
          const answer = d.next<{ type: string; sql: number; calls: Record<string, number> }>("statements")
          d.send({ type: "read" })
          return answer
        })
      )
    )
    const dispatcherCpu = dispatchers.map((_, i) => cpuAfter[i]! - cpuBefore[i]!)
    const stack = dispatcherCpu.reduce((a, b) => a + b, 0) + pgCost
    const perDelivery = (micros: number) => Math.round(micros / arrived.received)
    const sqlTotal = statements.reduce((sum, s) => sum + s.sql, 0)
    console.log(
      [
        `drain on ${databaseUrl === undefined ? "PGlite (in the dispatcher's process)" : "PostgreSQL"}: ${arrived.received} of ${expected} deliveries (${arrived.duplicates} duplicates) over ${WORKSPACES * ENDPOINTS} endpoints in ${WORKSPACES} workspaces, ${dispatchers.length} dispatcher process(es), concurrency ${process.env.WEBHOOK_DISPATCH_CONCURRENCY ?? 32}`,
        `  ${seconds.toFixed(2)} s, ${Math.round(arrived.received / seconds)} deliveries/s`,
        `  CPU us per delivery: ${dispatcherCpu.map((c, i) => `dispatcher ${i + 1} ${perDelivery(c)}`).join(", ")}${databaseUrl === undefined ? "" : `, PostgreSQL ${perDelivery(pgCost)}`}; stack ${perDelivery(stack)} (receiver ${perDelivery(receiverCpu)}, not counted)`,
        `  deliveries per core-second of the stack: ${Math.round(arrived.received / (stack / 1_000_000))}`,
        `  statements per delivery: ${(sqlTotal / arrived.received).toFixed(2)} (${sqlTotal} in all)`
      ].join("\n")
    )
    if (process.env.BENCH_STATEMENTS === "1") {
      const calls = new Map<string, number>()
      for (const s of statements)
        for (const [call, count] of Object.entries(s.calls)) calls.set(call, (calls.get(call) ?? 0) + count)
      for (const [call, count] of [...calls].sort((a, b) => b[1] - a[1]).slice(0, 12))
        console.log(`  ${String(count).padStart(7)}  ${call}`)
    }
    if (arrived.received < expected)
      return yield* Effect.fail(new Error("the drain did not finish in 10 minutes"))
  })

export const runDrain = () =>
  Effect.runPromise(
    Effect.scoped(
      serverUrl === undefined
        ? drain(undefined)
        : Effect.flatMap(freshDatabaseUrl(serverUrl), (fresh) => drain(fresh.url))
    )
  )
