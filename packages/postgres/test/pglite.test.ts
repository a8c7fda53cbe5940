/** What the embedded database adds to the shared adapters: its data directory, types, transactions, fairness. */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { UnitOfWork, WorkspaceRepository } from "@intake/domain"
import { aWorkspace, temporaryDirectory } from "@intake/testing"
import { Duration, Effect, Either, Exit, Fiber, Layer, Option } from "effect"
import { lockDataDirectory } from "../src/data-dir-lock.js"
import { layerPglite } from "../src/pglite-client.js"
import { migrated, PglitePortsLive, PgRepositoriesLive } from "../src/runtime.js"
import { sharedLayer } from "./support.js"

describe("PGlite data directory", () => {
  it.live(
    "creates a missing directory, keeps the data across a restart, and refuses a second opener while in use",
    () =>
      Effect.gen(function* () {
        const dataDir = Path.join(yield* temporaryDirectory("intake-pglite-"), "nested", ".data")
        const workspace = aWorkspace()
        yield* Effect.scoped(
          Effect.gen(function* () {
            const ports = yield* Layer.build(PglitePortsLive(dataDir))
            yield* Effect.provide(
              Effect.flatMap(WorkspaceRepository, (repo) => repo.insert(workspace)),
              ports
            )
            // A second server on the same directory fails clearly, without touching the data.
            const second = yield* Effect.either(Effect.scoped(Layer.build(PglitePortsLive(dataDir))))
            expect(Either.isLeft(second)).toBe(true)
            if (Either.isLeft(second)) {
              expect(second.left).toMatchObject({ _tag: "DataDirectoryLocked", pid: process.pid })
              expect((second.left as { message: string }).message).toContain(
                `${Path.resolve(dataDir)} is in use by another Intake process`
              )
            }
          })
        )
        expect(Fs.existsSync(Path.join(dataDir, "intake.lock"))).toBe(false)
        const found = yield* Effect.scoped(
          Effect.flatMap(Layer.build(PglitePortsLive(dataDir)), (ports) =>
            Effect.provide(
              Effect.flatMap(WorkspaceRepository, (repo) => repo.findById(workspace.id)),
              ports
            )
          )
        )
        expect(found).toEqual(Option.some(workspace))
      }).pipe(Effect.scoped),
    60_000
  )

  it.effect("a lock left by a process that is gone is taken over", () =>
    Effect.gen(function* () {
      const dataDir = yield* temporaryDirectory("intake-pglite-")
      const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"])
      const deadPid = Number(child.stdout.toString())
      Fs.writeFileSync(Path.join(dataDir, "intake.lock"), `${deadPid}\n`)
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* lockDataDirectory(dataDir)
          expect(Fs.readFileSync(Path.join(dataDir, "intake.lock"), "utf8").trim()).toBe(String(process.pid))
          expect(Either.isLeft(yield* Effect.either(Effect.scoped(lockDataDirectory(dataDir))))).toBe(true)
        })
      )
      expect(Fs.existsSync(Path.join(dataDir, "intake.lock"))).toBe(false)
    }).pipe(Effect.scoped)
  )
})

layer(sharedLayer(Layer.provideMerge(PgRepositoriesLive, migrated(layerPglite({})))), {
  timeout: Duration.seconds(60),
  excludeTestServices: true
})("PGlite client", (it) => {
  it.effect("returns int8 as strings, as pg does", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{
        big: unknown
        small: unknown
      }>`SELECT 9007199254740993::int8 AS big, count(*) AS small`
      expect(rows[0]).toEqual({ big: "9007199254740993", small: "1" })
    })
  )

  it.effect("yields to the event loop between the queries of a burst", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      let turns = 0
      let running = true
      const tick = () => {
        turns++
        if (running) setImmediate(tick)
      }
      setImmediate(tick)
      for (let i = 0; i < 30; i++) yield* sql`SELECT ${i}::int AS i`
      running = false
      // Without the yield, PGlite's queries settle in microtasks and no timer runs at all.
      expect(turns).toBeGreaterThanOrEqual(30)
    })
  )

  it.effect("a nested unit of work is part of the outer one: the outer's failure undoes its writes", () =>
    Effect.gen(function* () {
      const uow = yield* UnitOfWork
      const repo = yield* WorkspaceRepository
      const undone = aWorkspace()
      const failed = yield* uow
        .transaction(Effect.zipRight(uow.transaction(repo.insert(undone)), Effect.fail("no" as const)))
        .pipe(Effect.flip)
      expect(failed).toBe("no")
      expect(Option.isNone(yield* repo.findById(undone.id))).toBe(true)
    })
  )

  it.effect("statements of other fibers wait for a transaction; an interrupted one rolls back", () =>
    Effect.gen(function* () {
      const uow = yield* UnitOfWork
      const repo = yield* WorkspaceRepository
      const inside = aWorkspace()
      const holder = yield* Effect.fork(uow.transaction(Effect.zipRight(repo.insert(inside), Effect.never)))
      yield* Effect.sleep(Duration.millis(100))
      const reader = yield* Effect.fork(repo.findById(inside.id))
      yield* Effect.sleep(Duration.millis(100))
      // The reader is queued behind the open transaction.
      expect(reader.unsafePoll()).toBe(null)
      yield* Fiber.interrupt(holder)
      expect(yield* Fiber.join(reader)).toEqual(Option.none())
      const after = aWorkspace()
      yield* uow.transaction(repo.insert(after))
      expect(Option.isSome(yield* repo.findById(after.id))).toBe(true)
      expect(Exit.isInterrupted(yield* Fiber.await(holder))).toBe(true)
    })
  )
})

describe("PGlite memory", () => {
  it.live("runs with 16 MB of shared buffers, not PostgreSQL's 128 MB held in WebAssembly memory", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const client = yield* Layer.build(layerPglite({}))
        const rows = yield* Effect.provide(
          Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ shared_buffers: string }>`SHOW shared_buffers`),
          client
        )
        expect(rows[0]?.shared_buffers).toBe("16MB")
      })
    )
  )
})
