/**
 * The internals of `pg` (pinned in package.json; driver/README.md) that this driver reads,
 * writes or calls, declared on pg's own classes: the one place they are named. None is in
 * @types/pg; each is guarded by a test named in driver/README.md.
 */
import type { QueryResultRow } from "pg"

/** What pg keeps of a statement's row description to read its rows. */
export interface RowDescription {
  readonly fields: Array<unknown>
  readonly _parsers: Array<unknown> | undefined
  readonly _prebuiltEmptyResultObject: object | null
}

/** pg's connection, as the queries write with it. */
export type { Connection as PgConnection } from "pg"

declare module "pg" {
  /** The session a client holds: what a CancelRequest names (cancel.ts). */
  interface ClientBase {
    readonly processID?: number | null
    readonly secretKey?: number | null
    /**
     * False from a statement's send until the server says it is done with it, pg's own
     * state since its first versions (pg-pool.ts, a connection released mid-statement).
     */
    readonly readyForQuery?: boolean
  }

  /** pg's Query and Result, as PreparedQuery and its subclasses use them. */
  // biome-ignore lint/suspicious/noExplicitAny: the type parameters must be pg's own to merge with its class
  interface Query<R extends QueryResultRow = any, I extends any[] = any> {
    name: string
    readonly text: string
    queryMode?: string
    readonly values: ReadonlyArray<unknown> | undefined
    readonly portal: string
    readonly binary: boolean | undefined
    readonly rows: number | undefined
    _accumulateRows: boolean
    _canceledDueToError: unknown
    readonly _result: { -readonly [K in keyof RowDescription]: RowDescription[K] }
    hasBeenParsed(connection: Connection): boolean
    _getRows(connection: Connection, rows: number | undefined): void
    prepare(connection: Connection): void
    handleError(error: unknown, connection: Connection): void
    handleRowDescription(message: unknown): void
    handleDataRow(message: unknown): void
    handleCommandComplete(message: unknown, connection: Connection): void
  }

  /** pg's connection, as the queries write with it (one message each, `more` left out). */
  interface Connection {
    execute(config: { readonly portal?: string; readonly rows?: number | undefined }): void
    parse(config: { readonly text: string; readonly name: string; readonly types: Array<never> }): void
    bind(config: object): void
    close(config: { readonly type: "S"; readonly name: string }): void
    /** The statements prepared on the connection, by name (pg's own record). */
    readonly parsedStatements: Record<string, string>
  }
}
