/**
 * The repositories' statements as steps (statementSteps): on PostgreSQL sent on `pg`
 * directly, as named prepared statements, on the unit of work's client or the pool; on
 * PGlite, through `@effect/sql` (driver/README.md).
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { type StorageUnavailable, TraceContext } from "@intake/domain/internal"
import { Context, Effect, Exit, FiberRef, Option } from "effect"
import type { QueryResult } from "pg"
import { type Row, storageFailure } from "../storage.js"
import { PgReads } from "./direct-pool.js"
import { PreparedQuery, preparedQuery } from "./prepared-query.js"
import { ReplannedQuery } from "./replanned-query.js"
import { failed, sendThen } from "./send.js"
import { nameOf, type SqlText, unnamed } from "./statement.js"
import { TransactionClient } from "./transaction-client.js"

/**
 * One statement as a whole repository step: its rows made into the step's answer by
 * `decode` (a plain success or failure: `Exit.succeed`, `Exit.fail`), a database failure
 * turned into StorageUnavailable for `operation` unless `refine` names a failure of its own.
 * On PostgreSQL it is a named prepared statement on the current unit of work's client, else
 * on the pool, and costs the fiber three steps (find the unit of work in the fiber's context,
 * send, resume with the answer), where a statement followed by a map and a mapping of its
 * errors cost about a dozen (docs/performance.md, "Statements on pg"). On PGlite, and
 * inside a transaction `@effect/sql` opened itself, it goes through SqlClient. Its rows are
 * typed by `decode`'s parameter: a row interface of the table (rows.ts).
 */
export type StatementStep = <A, E = never, R extends object = Row>(
  operation: string,
  statement: SqlText,
  decode: (rows: ReadonlyArray<R>) => Effect.Effect<A, E>,
  refine?: (error: SqlError) => E | undefined
) => Effect.Effect<A, E | StorageUnavailable>

/**
 * A statement whose answer nothing waits for (no rows back), as a repository step that
 * succeeds once the statement is on its way. Its failure (StorageUnavailable, or the one
 * `refine` names) may come from the step of the unit of work's next statement, which
 * carried it, or from the unit of work's end: a failure the types of those do not name, so
 * a deferred step names one only for a caller that looks for it (IdempotencyStore.complete).
 */
export type DeferredStep = <E = never>(
  operation: string,
  statement: SqlText,
  refine?: (error: SqlError) => E | undefined
) => Effect.Effect<void, E | StorageUnavailable>

/** How a step's statement goes to PostgreSQL (statementSteps). */
type StepKind = "prepared" | "final" | "planned" | "deferred"

/**
 * The steps of this module's statements: `step` for any statement, `final` for a unit of
 * work's last one, which on PostgreSQL inside UnitOfWork.commitWith (and no nested unit of
 * work) is sent with the unit's COMMIT (TransactionClient.step), and `planned` for a
 * statement whose best plan depends on its values, which PostgreSQL then plans for the
 * values of every run (ReplannedQuery). `deferred` is for a statement that returns no rows
 * and whose failure only fails the unit of work: inside a unit of work on PostgreSQL it goes
 * with the unit's next statement, in the same write (TransactionClient.defer); elsewhere it
 * is a `step`.
 */
export const statementSteps: Effect.Effect<
  {
    readonly step: StatementStep
    readonly final: StatementStep
    readonly planned: StatementStep
    readonly deferred: DeferredStep
  },
  never,
  SqlClient.SqlClient
> = Effect.zipWith(
  Effect.all([SqlClient.SqlClient, Effect.serviceOption(PgReads)]),
  Effect.serviceOption(TraceContext.Tracing),
  ([sql, reads], tracing) => {
    // Chosen once, for the layer: behind a transaction-mode pooler every statement is unnamed,
    // which PostgreSQL plans for each run's values anyway (no ReplannedQuery needed).
    const pooled = Option.isSome(reads) && reads.value.poolMode === "transaction"
    const nameFor = pooled ? unnamed : nameOf
    const replanned = pooled ? PreparedQuery : ReplannedQuery
    const direct =
      (kind: StepKind): StatementStep =>
      <A, E = never, R extends object = Row>(
        operation: string,
        statement: SqlText,
        decode: (rows: ReadonlyArray<R>) => Effect.Effect<A, E>,
        refine?: (error: SqlError) => E | undefined
      ): Effect.Effect<A, E | StorageUnavailable> => {
        const onError = (error: SqlError): Effect.Effect<A, E | StorageUnavailable> => {
          const refined = refine?.(error)
          return refined === undefined ? Exit.fail(storageFailure(operation, error)) : Exit.fail(refined)
        }
        const viaSqlClient = () =>
          Effect.matchEffect(sql.unsafe<R>(statement.text, statement.values), {
            onFailure: onError,
            onSuccess: decode
          })
        if (Option.isNone(reads)) return viaSqlClient()
        const pool = reads.value.pool
        return Effect.withFiberRuntime<A, E | StorageUnavailable>((fiber) => {
          const transaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
          const connection = Option.isSome(transaction) ? transaction.value[0] : undefined
          if (connection !== undefined && !(connection instanceof TransactionClient)) return viaSqlClient()
          const answered = (error: Error | undefined, result: QueryResult) =>
            error ? onError(failed(error)) : decode(result.rows)
          const name = nameFor(statement.text)
          if (kind === "planned") {
            const query = preparedQuery(name, statement.text, statement.values, replanned)
            return connection === undefined
              ? sendThen<A, E | StorageUnavailable>(pool, query, undefined, answered)
              : connection.sendThen(query, answered)
          }
          if (connection === undefined)
            return sendThen<A, E | StorageUnavailable>(
              pool,
              preparedQuery(name, statement.text, statement.values),
              undefined,
              answered
            )
          if (kind === "deferred")
            // Its own failure, refined or not, stands for a StorageUnavailable of the step that carries it.
            return connection.defer(
              name,
              statement,
              onError as (error: SqlError) => Effect.Effect<never, StorageUnavailable>
            ) as Effect.Effect<A, StorageUnavailable>
          return connection.step(name, statement, kind === "final", decode, onError)
        })
      }
    // Traces on (docs/operations.md, Traces): each statement sent on `pg` directly is a span,
    // named by its operation, with its text and never its values. Through SqlClient
    // (PGlite, @effect/sql's own transactions), @effect/sql makes the span. Decided once, here:
    // with traces off the steps are the plain ones; on, a statement of a request or attempt
    // that is not sampled (Effect's tracer off for its fiber) is the plain step too.
    const via =
      Option.isNone(tracing) || Option.isNone(reads)
        ? direct
        : (kind: StepKind): StatementStep => {
            const step = direct(kind)
            return (operation, statement, decode, refine) =>
              Effect.withFiberRuntime((fiber) =>
                fiber.getFiberRef(FiberRef.currentTracerEnabled)
                  ? // A leaf: the span is not made the parent of the step (useSpan, not withSpan), which
                    // spares a copy of the fiber's services per statement (docs/operations.md, Traces).
                    Effect.useSpan(
                      `sql ${operation}`,
                      {
                        kind: "client",
                        captureStackTrace: false,
                        attributes: {
                          "db.system.name": "postgresql",
                          "db.operation.name": operation,
                          "db.query.text": statement.text
                        }
                      },
                      () => step(operation, statement, decode, refine)
                    )
                  : step(operation, statement, decode, refine)
              )
          }
    const deferredVia = via("deferred")
    return {
      step: via("prepared"),
      final: via("final"),
      planned: via("planned"),
      deferred: (operation, statement, refine) => deferredVia(operation, statement, () => Exit.void, refine)
    }
  }
)
