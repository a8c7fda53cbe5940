/** What the unit-of-work tests on PostgreSQL share: their database layer and statement helpers. */
import { layer } from "@effect/vitest"
import { Duration, Effect, Exit, Layer } from "effect"
import type { SqlText } from "../src/driver/statement.js"
import { statementSteps } from "../src/driver/statement-steps.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { PgUnitOfWork } from "../src/unit-of-work.js"

const database = PostgresTestDatabase(undefined, {
  maxConnections: 3,
  // Far longer than the test waits: only a cancel can end the statement in time.
  queryTimeout: Duration.seconds(60)
})

/** Statements as the repositories run them, answering their rows: any one, and a unit of work's last. */
export const statementsAndRows = Effect.map(statementSteps, ({ step, final, deferred }) => ({
  rowsOf: (sql: SqlText) => step("test", sql, Exit.succeed),
  finalRowsOf: (sql: SqlText) => final("test", sql, Exit.succeed),
  deferredOf: (sql: SqlText) => deferred("deferred test", sql)
}))

/** A suite on PgUnitOfWork over a fresh database of its own (one per file). */
export const onPostgres = layer(PgUnitOfWork.pipe(Layer.provideMerge(database)), {
  excludeTestServices: true,
  timeout: Duration.seconds(60)
})
