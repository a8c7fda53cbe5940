/**
 * The delivery queue and log on Postgres, and the dispatcher wake-up over LISTEN/NOTIFY.
 *
 * The queue is the `deliveries` rows with a `due_at`. A claim leases due rows with
 * `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED LIMIT n)`, so dispatchers in
 * several processes never wait on one another nor take the same row; completing is
 * conditional on the claim token, so a dispatcher whose lease ran out cannot overwrite
 * the work of the one that took the attempt over.
 */
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import {
  type Delivery,
  type DeliveryFilter,
  DeliveryRepository,
  DeliveryWakeups,
  type DomainEvent,
  EndpointHealth,
  type ListPosition,
  noDeliveryFilter,
  type OccurrenceWindow,
  type PageRequest,
  type WebhookEndpoint
} from "@intake/domain"
import { Effect, Layer, Option, Queue, Schedule, Stream } from "effect"
import { afterPosition, pageFrom } from "./paging.js"
import { type Row, stored, toDate, toDateOrNull, toMillis, toMillisOrNull, toNumber } from "./storage.js"
import { endpointFromRow } from "./webhooks.js"

const deliveryFromRow = (row: Row): Delivery => ({
  id: row.id as string,
  webhookId: row.webhook_id as string,
  eventId: row.event_id as string,
  eventType: row.event_type as string,
  attempt: toNumber(row.attempt),
  trigger: row.trigger as Delivery["trigger"],
  status: row.status as Delivery["status"],
  responseStatus: row.response_status === null ? null : toNumber(row.response_status),
  responseBody: row.response_body as string | null,
  error: row.error as string | null,
  durationMs: row.duration_ms === null ? null : toNumber(row.duration_ms),
  nextRetryAt: toMillisOrNull(row.next_retry_at),
  sentAt: toMillisOrNull(row.sent_at),
  createdAt: toMillis(row.created_at)
})

/** An outbox event. */
export const eventFromRow = (row: Row): DomainEvent => ({
  id: row.id as string,
  workspaceId: row.workspace_id as string,
  type: row.type as DomainEvent["type"],
  intakeBotId: row.intake_bot_id as string,
  submissionId: row.submission_id as string,
  contactId: row.contact_id as string | null,
  createdAt: toMillis(row.created_at)
})

/** An attempt as the log shows it: a pending one with its due time as `nextRetryAt`. */
const loggedFromRow = (row: Row): Delivery => {
  const delivery = deliveryFromRow(row)
  return delivery.status === "pending" && row.due_at !== null
    ? { ...delivery, nextRetryAt: toMillis(row.due_at) }
    : delivery
}

/**
 * A page of an endpoint's log within `filter`. Each filter is one condition that an index
 * of migration 5 serves with the list order (webhook, status or event type, created_at
 * desc, id desc); a submission's attempts are those of its events (domain_events_submission).
 */
export const listDeliveriesQuery = (
  sql: SqlClient.SqlClient,
  webhookId: string,
  page: PageRequest,
  filter: DeliveryFilter = noDeliveryFilter
) =>
  sql<Row>`SELECT * FROM deliveries d
    WHERE ${sql.and([
      sql`d.webhook_id = ${webhookId}`,
      ...(filter.status === null ? [] : [sql`d.status = ${filter.status}`]),
      ...(filter.eventType === null ? [] : [sql`d.event_type = ${filter.eventType}`]),
      ...(filter.submissionId === null
        ? []
        : [
            sql`d.event_id IN (SELECT e.id FROM domain_events e WHERE e.submission_id = ${filter.submissionId})`
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
  sql<Row>`SELECT e.*,
      (SELECT coalesce(max(d.attempt), 0) FROM deliveries d
        WHERE d.webhook_id = ${endpoint.id} AND d.event_id = e.id) AS attempts_made
    FROM domain_events e
    WHERE ${sql.and([
      sql`e.workspace_id = ${endpoint.workspaceId}`,
      sql`e.created_at >= ${toDate(window.since)}`,
      sql`e.created_at <= ${toDate(window.until)}`,
      sql`e.type IN ${sql.in([...endpoint.events])}`,
      ...(endpoint.intakeBotIds.length === 0
        ? []
        : [sql`e.intake_bot_id IN ${sql.in([...endpoint.intakeBotIds])}`]),
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

export const PgDeliveryRepository = Layer.effect(
  DeliveryRepository,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const insert = (rows: ReadonlyArray<ReturnType<typeof deliveryRow>>) =>
      rows.length === 0 ? Effect.void : Effect.asVoid(sql`INSERT INTO deliveries ${sql.insert(rows)}`)

    return DeliveryRepository.of({
      activeEndpoints: (workspaceId) =>
        stored("deliveries.activeEndpoints")(
          Effect.map(
            sql<Row>`SELECT * FROM webhook_endpoints WHERE workspace_id = ${workspaceId} AND status = 'active'
              ORDER BY created_at, id`,
            (rows) => rows.map(endpointFromRow)
          )
        ),
      endpoint: (webhookId) =>
        stored("deliveries.endpoint")(
          Effect.map(sql<Row>`SELECT * FROM webhook_endpoints WHERE id = ${webhookId}`, (rows) =>
            Option.map(Option.fromNullable(rows[0]), endpointFromRow)
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
      claimDue: (now, limit, leaseMs, claimToken) =>
        stored("deliveries.claimDue")(
          Effect.map(
            sql<Row>`UPDATE deliveries SET lease_until = ${toDate(now + leaseMs)}, claim_token = ${claimToken}
              WHERE id IN (
                SELECT id FROM deliveries
                WHERE due_at <= ${toDate(now)} AND (lease_until IS NULL OR lease_until <= ${toDate(now)})
                ORDER BY due_at, id
                LIMIT ${limit}
                FOR UPDATE SKIP LOCKED)
              RETURNING *`,
            // RETURNING keeps no order: earliest due first, as the port promises.
            (rows) =>
              [...rows]
                .sort(
                  (a, b) =>
                    toMillis(a.due_at) - toMillis(b.due_at) || ((a.id as string) < (b.id as string) ? -1 : 1)
                )
                .map(deliveryFromRow)
          )
        ),
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
      release: (ids, claimToken) =>
        ids.length === 0
          ? Effect.void
          : stored("deliveries.release")(
              Effect.asVoid(sql`UPDATE deliveries SET lease_until = NULL, claim_token = NULL
                WHERE ${sql.in("id", ids)} AND claim_token = ${claimToken} AND due_at IS NOT NULL`)
            ),
      insertFinished: (delivery) =>
        stored("deliveries.insertFinished")(insert([deliveryRow(delivery, null)])),
      nextDueAt: () =>
        stored("deliveries.nextDueAt")(
          Effect.map(
            sql<Row>`SELECT min(GREATEST(due_at, lease_until)) AS next FROM deliveries WHERE due_at IS NOT NULL`,
            (rows) => Option.map(Option.fromNullable(rows[0]?.next), toMillis)
          )
        ),
      findInWebhook: (webhookId, id) =>
        stored("deliveries.findInWebhook")(
          Effect.map(
            sql<Row>`SELECT * FROM deliveries WHERE id = ${id} AND webhook_id = ${webhookId}`,
            (rows) => Option.map(Option.fromNullable(rows[0]), loggedFromRow)
          )
        ),
      attemptsOf: (webhookId, eventId) =>
        stored("deliveries.attemptsOf")(
          Effect.map(
            sql<Row>`SELECT * FROM deliveries WHERE webhook_id = ${webhookId} AND event_id = ${eventId}
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
          Effect.map(sql<Row>`SELECT * FROM webhook_endpoints WHERE id = ${webhookId} FOR UPDATE`, (rows) =>
            Option.map(Option.fromNullable(rows[0]), endpointFromRow)
          )
        ),
      recoverableEvents: (endpoint, window, after, limit) =>
        stored("deliveries.recoverableEvents")(
          Effect.map(recoverableEventsQuery(sql, endpoint, window, after, limit), (rows) =>
            rows.map((row) => ({ event: eventFromRow(row), attemptsMade: toNumber(row.attempts_made) }))
          )
        ),
      // The row lock orders concurrent outcomes of one endpoint: no lost update of the streak.
      recordOutcome: (webhookId, outcome, disableAfterMs) =>
        stored("deliveries.recordOutcome")(
          sql.withTransaction(
            Effect.gen(function* () {
              const [row] =
                yield* sql<Row>`SELECT * FROM webhook_endpoints WHERE id = ${webhookId} FOR UPDATE`
              if (row === undefined) return Option.none<WebhookEndpoint>()
              const e = EndpointHealth.afterAttempt(endpointFromRow(row), outcome, disableAfterMs)
              yield* sql`UPDATE webhook_endpoints SET status = ${e.status},
                  last_delivery_at = ${toDateOrNull(e.lastDeliveryAt)}, last_delivery_ok = ${e.lastDeliveryOk},
                  consecutive_fails = ${e.consecutiveFails}, failing_since = ${toDateOrNull(e.failingSince)},
                  updated_at = ${toDate(e.updatedAt)}
                WHERE id = ${webhookId}`
              return Option.some(e)
            })
          )
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
