/**
 * The delivery queue and log on Postgres, and the dispatcher wake-up over LISTEN/NOTIFY.
 *
 * The queue is the `deliveries` rows with a `due_at`. A claim follows the isolation
 * policies (webhooks/delivery-isolation.ts of the domain, docs/webhooks.md): it walks the endpoints
 * with pending attempts and takes a transaction-scoped advisory lock on each (`pg_try_…`:
 * a claim never waits on another, it skips the endpoints another claim holds), in one
 * statement. Under those locks it reads their backlogs, in a statement whose snapshot
 * follows the locks, so every earlier claim of those endpoints is counted in flight, and
 * leases what the policies allow, in the fair order. Completing
 * is conditional on the claim token, so a dispatcher whose lease ran out cannot overwrite
 * the work of the one that took the attempt over.
 *
 * Statement style: the hot path (a claim, its outcomes, the dispatch sources) as named prepared statements on `pg` (driver/statement-steps.ts, `statement` or { text, values } for texts built once), where `@effect/sql` cost as much CPU again (docs/performance.md, "Statements on pg"); everything else through `@effect/sql`'s sql`...`.
 */
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import {
  type Delivery,
  type DeliveryFilter,
  DeliveryIsolation,
  DeliveryRepository,
  DeliveryWakeups,
  EndpointHealth,
  type ListPosition,
  noDeliveryFilter,
  type OccurrenceWindow,
  type OutcomeRecorded,
  type PageRequest,
  type WebhookEndpoint
} from "@intake/domain"
import { Effect, Exit, Layer, Option, Queue, Schedule, Stream } from "effect"
import { dispatchSourcesFromRows } from "./dispatch-sources.js"
import { PgReads } from "./driver/direct-pool.js"
import { directTransaction } from "./driver/direct-transaction.js"
import { statementSteps } from "./driver/statement-steps.js"
import { afterPosition, pageFrom } from "./paging.js"
import {
  backlogsStatement,
  completeManyStatement,
  dispatchSourcesStatement,
  leaseStatement,
  lockEndpointsStatement,
  lockQueuedEndpoints,
  reserveSendStatement
} from "./queue-statements.js"
import {
  type BacklogRow,
  type DeliveryRow,
  type DispatchSourcesRow,
  deliveryFromRow,
  eventFromRow,
  type IdRow,
  type LeasedDeliveryRow,
  type LoggedDeliveryRow,
  loggedFromRow,
  type RecoverableEventRow,
  type WebhookEndpointRow
} from "./rows.js"
import {
  purgedInBatches,
  type Row,
  stored,
  toDate,
  toDateOrNull,
  toMillis,
  toMillisOrNull,
  toNumber
} from "./storage.js"
import { commitWithFinal } from "./unit-of-work.js"
import { endpointFromRow } from "./webhooks.js"

/**
 * A page of an endpoint's log within `filter`. Each filter is one condition that an index
 * of migration 5 serves with the list order (webhook, status or event type, created_at
 * desc, id desc); a submission's attempts are those of its events (domain_events_submission).
 * Each row's event is read by its primary key, for its request id (loggedFromRow).
 */
export const listDeliveriesQuery = (
  sql: SqlClient.SqlClient,
  webhookId: string,
  page: PageRequest,
  filter: DeliveryFilter = noDeliveryFilter
) =>
  sql<LoggedDeliveryRow>`SELECT d.*, e.request_id FROM deliveries d LEFT JOIN domain_events e ON e.id = d.event_id
    WHERE ${sql.and([
      sql`d.webhook_id = ${webhookId}`,
      ...(filter.status === null ? [] : [sql`d.status = ${filter.status}`]),
      ...(filter.eventType === null ? [] : [sql`d.event_type = ${filter.eventType}`]),
      ...(filter.submissionId === null
        ? []
        : [
            sql`d.event_id IN (SELECT raised.id FROM domain_events raised WHERE raised.submission_id = ${filter.submissionId})`
          ]),
      ...(filter.createdAfter === null ? [] : [sql`d.created_at >= ${toDate(filter.createdAfter)}`]),
      ...(filter.createdBefore === null ? [] : [sql`d.created_at <= ${toDate(filter.createdBefore)}`]),
      ...afterPosition(sql, "d", page.after)
    ])}
    ORDER BY d.created_at DESC, d.id DESC
    LIMIT ${page.limit + 1}`

/**
 * The events a recovery queues (DeliveryRepository.recoverableEvents), oldest first, with
 * the highest attempt number each already has on the endpoint. Served by
 * domain_events_workspace (workspace, created_at, id) and deliveries_event.
 */
export const recoverableEventsQuery = (
  sql: SqlClient.SqlClient,
  endpoint: WebhookEndpoint,
  window: OccurrenceWindow,
  after: ListPosition | null,
  limit: number
) =>
  sql<RecoverableEventRow>`SELECT e.*,
      (SELECT coalesce(max(d.attempt), 0) FROM deliveries d
        WHERE d.webhook_id = ${endpoint.id} AND d.event_id = e.id) AS attempts_made
    FROM domain_events e
    WHERE ${sql.and([
      sql`e.workspace_id = ${endpoint.workspaceId}`,
      sql`e.created_at >= ${toDate(window.since)}`,
      sql`e.created_at <= ${toDate(window.until)}`,
      sql`e.type IN ${sql.in([...endpoint.events])}`,
      // As EventPayloads.endpointTakes: webhook.disabled ignores the bot filter and never goes
      // to the endpoint it is about.
      ...(endpoint.intakeBotIds.length === 0
        ? []
        : [sql`(e.type = 'webhook.disabled' OR e.intake_bot_id IN ${sql.in([...endpoint.intakeBotIds])})`]),
      sql`e.webhook_id IS DISTINCT FROM ${endpoint.id}`,
      ...(after === null ? [] : [sql`(e.created_at, e.id) > (${toDate(after.createdAt)}, ${after.id})`]),
      sql`NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.webhook_id = ${endpoint.id} AND d.event_id = e.id
        AND d.status IN ('succeeded', 'pending'))`
    ])}
    ORDER BY e.created_at, e.id
    LIMIT ${limit}`

/** The columns of one row; `dueAt` null for a finished attempt. */
export const deliveryRow = (d: Delivery, dueAt: number | null) => ({
  id: d.id,
  webhook_id: d.webhookId,
  event_id: d.eventId,
  event_type: d.eventType,
  attempt: d.attempt,
  trigger: d.trigger,
  status: d.status,
  response_status: d.responseStatus,
  response_body: d.responseBody,
  error: d.error,
  duration_ms: d.durationMs,
  next_retry_at: toDateOrNull(d.nextRetryAt),
  sent_at: toDateOrNull(d.sentAt),
  created_at: toDate(d.createdAt),
  due_at: toDateOrNull(dueAt),
  lease_until: null,
  claim_token: null
})

/** One of an endpoint's waiting attempts, by its place in the endpoint's queue (0 is its head). */
interface QueuePlace {
  readonly webhookId: string
  readonly place: number
}

/** Queue order of an endpoint's rows: due time, then id. */
const byQueueOrder = (a: DeliveryRow, b: DeliveryRow) =>
  toMillis(a.due_at) - toMillis(b.due_at) || (a.id < b.id ? -1 : 1)

export const PgDeliveryRepository = Layer.effect(
  DeliveryRepository,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { step, final, deferred, planned } = yield* statementSteps
    const reads = yield* Effect.serviceOption(PgReads)
    /** A claim's own transaction: on PostgreSQL on a client of the pool, its BEGIN sent with its first statement. */
    const transaction = <A, E, R>(self: Effect.Effect<A, E, R>) =>
      Option.isSome(reads) ? directTransaction(reads.value, self) : sql.withTransaction(self)
    /**
     * The backlogs at `now` of the endpoints with pending attempts (all of them, or those whose
     * claim lock this transaction holds), with up to `waitingMax` of each one's due waiting
     * attempts counted.
     */
    // Planned for the values of each run (a new name every five runs, driver/README.md): with a long
    // history, the plan PostgreSQL settles on for any `now` reads two bitmap indexes per
    // endpoint where the one for this `now` walks the queue's index, 156 against 9.6 ms over
    // a million attempts (docs/history-partitions.md).
    const backlogs = (operation: string, now: number, held: boolean, waitingMax = 0) =>
      planned(operation, backlogsStatement(now, waitingMax, held), (rows: ReadonlyArray<BacklogRow>) => {
        const waitingBy = new Map<string, number>()
        const list = rows.map((row): DeliveryIsolation.EndpointBacklog => {
          const webhookId = row.webhook_id
          waitingBy.set(webhookId, toNumber(row.waiting))
          return {
            webhookId,
            workspaceId: row.workspace_id ?? null,
            consecutiveFails: row.consecutive_fails === null ? 0 : toNumber(row.consecutive_fails),
            circuitOpenUntil: toMillisOrNull(row.circuit_open_until),
            rateLimit: row.rate_limit === null ? null : toNumber(row.rate_limit),
            nextSendAt: toMillisOrNull(row.next_send_at),
            inFlight: toNumber(row.in_flight),
            headDueAt: toMillisOrNull(row.head_due_at),
            firstLeaseEnd: toMillisOrNull(row.first_lease_end)
          }
        })
        /** The endpoint's waiting attempts as places in its queue, for planClaim. */
        const waiting = (webhookId: string): ReadonlyArray<QueuePlace> =>
          Array.from({ length: waitingBy.get(webhookId) ?? 0 }, (_, place) => ({ webhookId, place }))
        return Exit.succeed({ list, waiting })
      })

    const claim = (
      now: number,
      limit: number,
      leaseMs: number,
      claimToken: string,
      isolation = DeliveryIsolation.DEFAULT_ISOLATION
    ) =>
      stored("deliveries.claim")(
        transaction(
          Effect.gen(function* () {
            // Every endpoint with pending attempts that no other claim holds, locked in
            // one statement that answers nothing, so it goes with the next one (with BEGIN:
            // one write); the policies then pick from their backlogs.
            yield* deferred("deliveries.claim", lockQueuedEndpoints)
            // A new statement, a new snapshot: every claim that held these locks before is seen.
            // One more than an endpoint may take, to tell whether it leaves any waiting.
            const fresh = yield* backlogs(
              "deliveries.claim",
              now,
              true,
              Math.max(1, isolation.maxInFlight) + 1
            )
            if (fresh.list.length === 0) return { deliveries: [], more: false, claimedAt: now }
            const plan = DeliveryIsolation.planClaim(fresh.list, fresh.waiting, now, limit, isolation)
            if (plan.attempts.length === 0) return { deliveries: [], more: plan.more, claimedAt: now }
            // The rows the plan takes, read as they are leased, with the rate limits' next
            // sends in the same statement.
            const counts = new Map<string, number>()
            for (const { webhookId } of plan.attempts) counts.set(webhookId, (counts.get(webhookId) ?? 0) + 1)
            // The claim's last statement: on PostgreSQL its COMMIT goes with it.
            const leased = yield* commitWithFinal(
              final(
                "deliveries.claim",
                leaseStatement(now, now + leaseMs, claimToken, counts, plan.nextSendAt),
                (rows: ReadonlyArray<LeasedDeliveryRow>) => Exit.succeed(rows)
              )
            )
            // In the fair order the plan made: a place is its endpoint's n-th attempt in queue order.
            const byEndpoint = new Map<string, Array<LeasedDeliveryRow>>()
            for (const row of leased) {
              const queue = byEndpoint.get(row.webhook_id)
              if (queue === undefined) byEndpoint.set(row.webhook_id, [row])
              else queue.push(row)
            }
            for (const queue of byEndpoint.values()) queue.sort(byQueueOrder)
            const deliveries = plan.attempts.flatMap(({ webhookId, place }) => {
              const row = byEndpoint.get(webhookId)?.[place]
              return row === undefined ? [] : [deliveryFromRow(row)]
            })
            return { deliveries, more: plan.more, claimedAt: now, sources: dispatchSourcesFromRows(leased) }
          })
        )
      )

    const insert = (rows: ReadonlyArray<ReturnType<typeof deliveryRow>>) =>
      rows.length === 0 ? Effect.void : Effect.asVoid(sql`INSERT INTO deliveries ${sql.insert(rows)}`)

    return DeliveryRepository.of({
      activeEndpoints: (workspaceId) =>
        stored("deliveries.activeEndpoints")(
          Effect.map(
            sql<WebhookEndpointRow>`SELECT * FROM webhook_endpoints WHERE workspace_id = ${workspaceId} AND status = 'active'
              ORDER BY created_at, id`,
            (rows) => rows.map(endpointFromRow)
          )
        ),
      endpoint: (webhookId) =>
        stored("deliveries.endpoint")(
          Effect.map(
            sql<WebhookEndpointRow>`SELECT * FROM webhook_endpoints WHERE id = ${webhookId}`,
            (rows) => Option.map(Option.fromNullable(rows[0]), endpointFromRow)
          )
        ),
      enqueue: (deliveries, dueAt) =>
        stored("deliveries.enqueue")(insert(deliveries.map((d) => deliveryRow(d, dueAt)))),
      advance: (ids, dueAt) =>
        ids.length === 0
          ? Effect.void
          : stored("deliveries.advance")(
              Effect.asVoid(sql`UPDATE deliveries SET due_at = ${toDate(dueAt)}
                WHERE ${sql.in("id", ids)} AND due_at > ${toDate(dueAt)}`)
            ),
      claimDue: (now, limit, leaseMs, claimToken, isolation) =>
        Effect.map(claim(now, limit, leaseMs, claimToken, isolation), (claimed) => claimed.deliveries),
      claim,
      complete: (finished, claimToken, next) =>
        stored("deliveries.complete")(
          sql.withTransaction(
            Effect.gen(function* () {
              // Losing this commit in a crash only means the attempt is sent again when its
              // lease ends (at least once holds), so it need not wait for the WAL flush: the
              // endpoint's row lock, taken by recordOutcome in the same transaction, is then
              // held for microseconds, not a disk flush, and one endpoint's deliveries don't queue.
              yield* sql`SET LOCAL synchronous_commit = off`
              const updated = yield* sql<Row>`UPDATE deliveries SET status = ${finished.status},
                  response_status = ${finished.responseStatus}, response_body = ${finished.responseBody},
                  error = ${finished.error}, duration_ms = ${finished.durationMs},
                  next_retry_at = ${toDateOrNull(finished.nextRetryAt)}, sent_at = ${toDateOrNull(finished.sentAt)},
                  due_at = NULL, lease_until = NULL, claim_token = NULL
                WHERE id = ${finished.id} AND due_at IS NOT NULL AND claim_token = ${claimToken}
                RETURNING id`
              if (updated.length === 0) return false
              if (next !== null) yield* insert([deliveryRow(next.delivery, next.dueAt)])
              return true
            })
          )
        ),
      // A unit of work's last statement (UnitOfWork.commitWith): it may carry the COMMIT.
      completeMany: (attempts, claimToken, health) =>
        final(
          "deliveries.completeMany",
          completeManyStatement(attempts, claimToken, health),
          (rows: ReadonlyArray<IdRow>) => Exit.succeed(rows.map((row) => row.id))
        ),
      dispatchSources: (deliveries) =>
        deliveries.length === 0
          ? Effect.succeed(new Map())
          : step(
              "deliveries.dispatchSources",
              dispatchSourcesStatement(deliveries),
              (rows: ReadonlyArray<DispatchSourcesRow>) => Exit.succeed(dispatchSourcesFromRows(rows))
            ),
      // In id order, as the port asks: batches of the same endpoints lock them alike.
      lockEndpoints: (ids) =>
        ids.length === 0
          ? Effect.succeed([])
          : step(
              "deliveries.lockEndpoints",
              lockEndpointsStatement(ids),
              (rows: ReadonlyArray<WebhookEndpointRow>) => Exit.succeed(rows.map(endpointFromRow))
            ),
      reserveSend: (webhookId, at, spacingMs) =>
        step("deliveries.reserveSend", reserveSendStatement(webhookId, at, spacingMs), ([row]) =>
          Exit.succeed(
            toNumber(row?.reserved ?? 0) > 0 ? null : toMillis(row?.last_sent_at ?? at) + spacingMs
          )
        ),
      release: (ids, claimToken) =>
        ids.length === 0
          ? Effect.void
          : stored("deliveries.release")(
              Effect.asVoid(sql`UPDATE deliveries SET lease_until = NULL, claim_token = NULL
                WHERE ${sql.in("id", ids)} AND claim_token = ${claimToken} AND due_at IS NOT NULL`)
            ),
      insertFinished: (delivery) =>
        stored("deliveries.insertFinished")(insert([deliveryRow(delivery, null)])),
      nextDueAt: (now, isolation = DeliveryIsolation.DEFAULT_ISOLATION) =>
        Effect.map(backlogs("deliveries.nextDueAt", now, false), (all) =>
          Option.fromNullable(DeliveryIsolation.earliestClaimableAt(all.list, now, isolation))
        ),
      queueHealth: (now) =>
        stored("deliveries.queueHealth")(
          Effect.map(
            sql<Row>`SELECT q.pending, q.oldest_due_at,
                (SELECT count(*) FROM webhook_endpoints WHERE circuit_open_until > ${toDate(now)}) AS circuits_open
              FROM (SELECT count(*) AS pending, min(due_at) AS oldest_due_at FROM deliveries
                WHERE due_at IS NOT NULL) AS q`,
            ([row]) => ({
              pending: toNumber(row?.pending ?? 0),
              oldestDueAt: toMillisOrNull(row?.oldest_due_at ?? null),
              circuitsOpen: toNumber(row?.circuits_open ?? 0)
            })
          )
        ),
      findInWebhook: (webhookId, id) =>
        stored("deliveries.findInWebhook")(
          Effect.map(
            sql<LoggedDeliveryRow>`SELECT d.*, e.request_id FROM deliveries d LEFT JOIN domain_events e ON e.id = d.event_id
              WHERE d.id = ${id} AND d.webhook_id = ${webhookId}`,
            (rows) => Option.map(Option.fromNullable(rows[0]), loggedFromRow)
          )
        ),
      attemptsOf: (webhookId, eventId) =>
        stored("deliveries.attemptsOf")(
          Effect.map(
            sql<DeliveryRow>`SELECT * FROM deliveries WHERE webhook_id = ${webhookId} AND event_id = ${eventId}
              ORDER BY attempt, created_at, id`,
            (rows) => rows.map(deliveryFromRow)
          )
        ),
      list: (webhookId, page, filter) =>
        stored("deliveries.list")(
          Effect.map(listDeliveriesQuery(sql, webhookId, page, filter), (rows) =>
            pageFrom(rows, page.limit, loggedFromRow)
          )
        ),
      lockEndpoint: (webhookId) =>
        stored("deliveries.lockEndpoint")(
          Effect.map(
            sql<WebhookEndpointRow>`SELECT * FROM webhook_endpoints WHERE id = ${webhookId} FOR UPDATE`,
            (rows) => Option.map(Option.fromNullable(rows[0]), endpointFromRow)
          )
        ),
      recoverableEvents: (endpoint, window, after, limit) =>
        stored("deliveries.recoverableEvents")(
          Effect.map(recoverableEventsQuery(sql, endpoint, window, after, limit), (rows) =>
            rows.map((row) => ({ event: eventFromRow(row), attemptsMade: toNumber(row.attempts_made) }))
          )
        ),
      // The row lock orders concurrent outcomes of one endpoint: no lost update of the streak.
      recordOutcome: (webhookId, outcome, disableAfterMs, isolation) =>
        stored("deliveries.recordOutcome")(
          sql.withTransaction(
            Effect.gen(function* () {
              const [row] =
                yield* sql<WebhookEndpointRow>`SELECT * FROM webhook_endpoints WHERE id = ${webhookId} FOR UPDATE`
              if (row === undefined) return Option.none<OutcomeRecorded>()
              const before = endpointFromRow(row)
              const e = EndpointHealth.afterAttempt(before, outcome, disableAfterMs, isolation)
              yield* sql`UPDATE webhook_endpoints SET status = ${e.status},
                  last_delivery_at = ${toDateOrNull(e.lastDeliveryAt)}, last_delivery_ok = ${e.lastDeliveryOk},
                  consecutive_fails = ${e.consecutiveFails}, failing_since = ${toDateOrNull(e.failingSince)},
                  circuit_open_until = ${toDateOrNull(e.circuitOpenUntil)}, updated_at = ${toDate(e.updatedAt)}
                WHERE id = ${webhookId}`
              return Option.some({ endpoint: e, previousStatus: before.status })
            })
          )
        ),
      // Each batch its own short statement (no long lock, within the query timeout), as the
      // idempotency purge; SKIP LOCKED leaves rows another purge or a dispatcher holds.
      purgeOlderThan: (before, batchSize) =>
        stored("deliveries.purgeOlderThan")(
          Effect.gen(function* () {
            const deliveries = yield* purgedInBatches(
              batchSize,
              sql<Row>`WITH purged AS (
                DELETE FROM deliveries WHERE id IN (
                  SELECT id FROM deliveries WHERE due_at IS NULL AND created_at < ${toDate(before)}
                  LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
                ) RETURNING 1
              ) SELECT count(*) AS purged FROM purged`
            )
            const events = yield* purgedInBatches(
              batchSize,
              sql<Row>`WITH purged AS (
                DELETE FROM domain_events WHERE id IN (
                  SELECT e.id FROM domain_events e
                  WHERE e.created_at < ${toDate(before)}
                    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.due_at IS NOT NULL)
                  ORDER BY e.created_at, e.id
                  LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
                ) RETURNING 1
              ) SELECT count(*) AS purged FROM purged`
            )
            return { deliveries, events }
          })
        )
    })
  })
)

/** The NOTIFY channel of queued deliveries. */
export const DELIVERY_CHANNEL = "intake_deliveries"

/**
 * Wake-ups over LISTEN/NOTIFY, shared by every process on the database. Signals coalesce
 * in one slot. NOTIFY is sent with `SELECT pg_notify(…)`, which runs on pg and PGlite
 * alike; the payload is not empty because `@effect/sql-pg` drops empty ones. On PostgreSQL
 * the listener comes back by itself when its connection is lost (listen.ts); one that
 * fails otherwise is started again. Meanwhile the dispatchers' poll covers the gap.
 */
export const PgDeliveryWakeups = Layer.scoped(
  DeliveryWakeups,
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    const signals = yield* Queue.sliding<void>(1)
    yield* client.listen(DELIVERY_CHANNEL).pipe(
      Stream.runForEach(() => Queue.offer(signals, undefined)),
      Effect.tapErrorCause((cause) =>
        Effect.logWarning("delivery wake-ups: listening failed; retrying", cause)
      ),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped
    )
    return DeliveryWakeups.of({
      notify: client`SELECT pg_notify(${DELIVERY_CHANNEL}, 'queued')`.pipe(
        Effect.tapErrorCause((cause) => Effect.logWarning("delivery wake-up not sent", cause)),
        Effect.ignore
      ),
      next: Queue.take(signals)
    })
  })
)

export const PgDeliveryPortsLive = Layer.merge(PgDeliveryRepository, PgDeliveryWakeups)
