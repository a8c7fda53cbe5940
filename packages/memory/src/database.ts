/**
 * The in-memory database behind every memory adapter. One lock serializes transactions
 * (the strongest isolation there is, which is what the quota, key-cap and idempotency
 * rules need); writes inside a transaction record how to undo themselves, so a failure,
 * a defect or an interruption leaves the tables as they were. A transaction nested in
 * another is part of it, as on PostgreSQL (no savepoints): its writes are undone when the
 * outermost one fails.
 */
import type {
  ApiKey,
  Contact,
  Delivery,
  DomainEvent,
  IntakeBot,
  Message,
  StoredResponse,
  Submission,
  SummaryJob,
  WebhookEndpoint,
  Workspace
} from "@intake/domain"
import { Effect, Exit, FiberRef } from "effect"

export interface IdempotencyRecord {
  readonly fingerprint: string
  /** null while reserved (in flight) by `reserve`. */
  readonly response: StoredResponse | null
  readonly createdAt: number
  readonly expiresAt: number
}

/** A pending delivery attempt's place in the queue. */
export interface QueuedDelivery {
  readonly dueAt: number
  /** Until when a dispatcher holds it; null when nobody does. */
  readonly leaseUntil: number | null
  readonly claimToken: string | null
}

/** A summary job and its place in the queue. */
export interface QueuedSummaryJob extends QueuedDelivery {
  readonly job: SummaryJob
}

export interface Tables {
  readonly workspaces: Map<string, Workspace>
  readonly apiKeys: Map<string, ApiKey>
  /** keyHash -> key id */
  readonly apiKeysByHash: Map<string, string>
  readonly bots: Map<string, IntakeBot>
  readonly botSlugs: Set<string>
  readonly submissions: Map<string, Submission>
  /** submission id -> its messages, oldest first */
  readonly messages: Map<string, ReadonlyArray<Message>>
  /** `${workspaceId}|${period}` -> submissions counted */
  readonly submissionUsage: Map<string, number>
  readonly contacts: Map<string, Contact>
  /** `${workspaceId}|${lowercased email}` -> contact id */
  readonly contactsByEmail: Map<string, string>
  readonly events: Map<string, DomainEvent>
  readonly webhooks: Map<string, WebhookEndpoint>
  readonly deliveries: Map<string, Delivery>
  /** delivery id -> queue position, for pending attempts only */
  readonly deliveryQueue: Map<string, QueuedDelivery>
  /** webhook id -> the earliest moment its rate limit lets the next send start */
  readonly nextSendAt: Map<string, number>
  /** webhook id -> when its last send under a rate limit started (the send gate's) */
  readonly lastSentAt: Map<string, number>
  /** submission id -> its summary job */
  readonly summaryJobs: Map<string, QueuedSummaryJob>
  /** `${apiKeyId}|${key}` -> record */
  readonly idempotency: Map<string, IdempotencyRecord>
}

const emptyTables = (): Tables => ({
  workspaces: new Map(),
  apiKeys: new Map(),
  apiKeysByHash: new Map(),
  bots: new Map(),
  botSlugs: new Set(),
  submissions: new Map(),
  messages: new Map(),
  submissionUsage: new Map(),
  contacts: new Map(),
  contactsByEmail: new Map(),
  events: new Map(),
  webhooks: new Map(),
  deliveries: new Map(),
  deliveryQueue: new Map(),
  nextSendAt: new Map(),
  lastSentAt: new Map(),
  summaryJobs: new Map(),
  idempotency: new Map()
})

type UndoLog = Array<() => void>

/** Writes through a Writer are undone when their transaction fails. */
export interface Writer {
  readonly set: <K, V>(map: Map<K, V>, key: K, value: V) => void
  readonly remove: <K, V>(map: Map<K, V>, key: K) => void
  readonly add: <V>(set: Set<V>, value: V) => void
}

const writerFor = (log: UndoLog): Writer => ({
  set: (map, key, value) => {
    const had = map.has(key)
    const previous = map.get(key)
    map.set(key, value)
    log.push(() => (had ? map.set(key, previous!) : map.delete(key)))
  },
  remove: (map, key) => {
    if (!map.has(key)) return
    const previous = map.get(key)!
    map.delete(key)
    log.push(() => map.set(key, previous))
  },
  add: (set, value) => {
    if (set.has(value)) return
    set.add(value)
    log.push(() => set.delete(value))
  }
})

const undo = (log: UndoLog) => {
  for (let i = log.length - 1; i >= 0; i--) log[i]!()
}

/** The undo log of the transaction the current fiber runs in, if any. */
const currentTransaction = FiberRef.unsafeMake<UndoLog | null>(null)

export class MemoryDatabase extends Effect.Service<MemoryDatabase>()("@intake/memory/MemoryDatabase", {
  effect: Effect.gen(function* () {
    const tables = emptyTables()
    const lock = yield* Effect.makeSemaphore(1)

    /** Runs `self` as one transaction (inside another, as part of it). */
    const transaction = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.flatMap(FiberRef.get(currentTransaction), (outer) => {
        if (outer !== null) return self
        const log: UndoLog = []
        return lock.withPermits(1)(
          Effect.onExit(Effect.locally(self, currentTransaction, log), (exit) =>
            Effect.sync(() => {
              if (Exit.isFailure(exit)) undo(log)
            })
          )
        )
      })

    /** One synchronous read or write, atomic on its own or part of the current transaction. */
    const run = <A>(f: (tables: Tables, write: Writer) => A): Effect.Effect<A> =>
      Effect.flatMap(FiberRef.get(currentTransaction), (log) =>
        log === null
          ? lock.withPermits(1)(Effect.sync(() => f(tables, writerFor([]))))
          : Effect.sync(() => f(tables, writerFor(log)))
      )

    return { tables, transaction, run } as const
  })
}) {}
