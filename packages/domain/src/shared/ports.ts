/**
 * Ports: what the domain needs from the outside, one explicit shape each. Every method
 * fails with a domain error or with StorageUnavailable, nothing else. This file holds the
 * ports every area uses (platform, unit of work, operations); each area keeps its own
 * (access/ports.ts, submissions/ports.ts, webhooks/ports.ts, summaries/ports.ts).
 *
 * Transactions: `UnitOfWork.transaction` runs an effect so that every repository call
 * made inside it commits together or not at all, serialized against other transactions
 * where the rule needs it (quota, key caps, idempotency). Repository calls made outside
 * a transaction are atomic one by one. A transaction run inside another is part of it
 * (no savepoint): when it fails, the enclosing one must fail too, never go on.
 */
import { Context, type Effect } from "effect"
import type { StorageUnavailable } from "./errors.js"
import type { IdOfPrefix, IdPrefix } from "./ids.js"

// ---------------------------------------------------------------- platform

/** Cryptographic primitives. Synchronous: they are cheap and have no failure mode. */
export class Crypto extends Context.Tag("@intake/Crypto")<
  Crypto,
  {
    readonly sha256Hex: (input: string) => string
    readonly hmacSha256: (key: Uint8Array, message: string) => Uint8Array
    readonly randomBytes: (size: number) => Uint8Array
    /** Constant-time equality of two strings (false when the lengths differ). */
    readonly constantTimeEqual: (a: string, b: string) => boolean
  }
>() {}

/** Identifier source: prefixed, time-sortable, unique (`sub_01J…`). */
export class Ids extends Context.Tag("@intake/Ids")<
  Ids,
  {
    readonly next: <P extends IdPrefix>(prefix: P) => Effect.Effect<IdOfPrefix[P]>
    /**
     * An id for a time the caller has read from the Clock already: the ids of one
     * operation (a create's submission, events and attempts) from one read, without a step
     * of the fiber per id.
     */
    readonly at: <P extends IdPrefix>(prefix: P, millis: number) => IdOfPrefix[P]
  }
>() {}

export class UnitOfWork extends Context.Tag("@intake/UnitOfWork")<
  UnitOfWork,
  {
    readonly transaction: <A, E, R>(
      self: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | StorageUnavailable, R>
    /**
     * Runs `step` as the last step of the unit of work it runs in: nothing runs in that unit
     * after it. A storage may commit the unit with the step's final statement, in the same
     * round trip (PostgreSQL: docs/performance.md, "Round trips of a create"); in a nested unit
     * of work, or outside one, the step runs as it is.
     */
    readonly commitWith: <A, E, R>(step: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  }
>() {}

// ---------------------------------------------------------------- operations

/** A database pool's connections; null where the store has no such thing (PGlite waits in a queue of its own). */
export interface PoolConnections {
  readonly total: number
  readonly idle: number | null
  readonly waiting: number | null
}

/**
 * The database's connections as the operator's metrics show them (docs/operations.md,
 * Metrics): pg's pool on PostgreSQL, PGlite's one connection. Absent on the memory store.
 */
export class ConnectionPool extends Context.Tag("@intake/ConnectionPool")<
  ConnectionPool,
  { readonly connections: () => PoolConnections }
>() {}
