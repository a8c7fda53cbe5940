/**
 * The delivery engine's statements on PostgreSQL (docs/webhooks.md, "How the engine sends"),
 * each of one fixed text, so that it runs as a named prepared statement (driver/README.md): parsed
 * and planned once per connection, not at each claim or batch. Lists go as one text
 * parameter split in SQL (ids never hold a comma), json rows as one json parameter.
 */
import type { Delivery, WebhookEndpoint } from "@intake/domain"
import type { SqlText } from "./driver/statement.js"

/** Ids as one text parameter, split in SQL: the same on pg and PGlite (ids never hold a comma). */
export const idList = (ids: ReadonlyArray<string>) => ids.join(",")

const iso = (millis: number) => new Date(millis).toISOString()
const isoOrNull = (millis: number | null) => (millis === null ? null : iso(millis))

/**
 * The endpoints with pending attempts: a walk over the distinct webhook ids of the queue
 * index, one probe each, ordered as deliveries_queued is, so that index serves each probe
 * (the finished rows of an endpoint, due_at NULL, are not in it and never walked over).
 */
const QUEUED_ENDPOINTS = `WITH RECURSIVE walk(webhook_id) AS (
    (SELECT webhook_id FROM deliveries WHERE due_at IS NOT NULL ORDER BY webhook_id, due_at LIMIT 1)
    UNION ALL
    SELECT (SELECT d.webhook_id FROM deliveries d
      WHERE d.due_at IS NOT NULL AND d.webhook_id > walk.webhook_id
      ORDER BY d.webhook_id, d.due_at LIMIT 1)
    FROM walk WHERE walk.webhook_id IS NOT NULL)
  SELECT webhook_id FROM walk WHERE webhook_id IS NOT NULL`

/** The claim lock of an endpoint, transaction-scoped: a bigint key per webhook id. */
const CLAIM_LOCK_KEY = (webhookId: string) => `hashtextextended('intake:claim:' || ${webhookId}, 0)`

/**
 * Every queued endpoint that no other claim holds, locked until the claim's transaction
 * ends. It answers no rows (the count forces the walk and its locks; no row passes `< 0`),
 * so it goes in one write with the backlogs' statement that follows (driver/transaction-client.ts, `defer`),
 * which finds the endpoints this transaction holds in pg_locks.
 */
export const lockQueuedEndpoints: SqlText = {
  text: `SELECT FROM (SELECT count(*) AS locked FROM (${QUEUED_ENDPOINTS}) q
    WHERE pg_try_advisory_xact_lock(${CLAIM_LOCK_KEY("q.webhook_id")})) c WHERE c.locked < 0`,
  values: []
}

/**
 * One endpoint's backlog at $1 (the policies' input): its circuit and rate limit, attempts in
 * flight and its first lease's end (through deliveries_leased: the leased rows only), its
 * earliest waiting attempt, and how many are due and waiting, up to $2.
 */
const backlogColumns = `q.webhook_id, e.workspace_id, e.consecutive_fails, e.circuit_open_until, e.rate_limit,
    p.next_send_at,
    (SELECT count(*) FROM deliveries d
      WHERE d.webhook_id = q.webhook_id AND d.due_at IS NOT NULL AND d.lease_until IS NOT NULL
        AND d.lease_until > $1) AS in_flight,
    (SELECT min(d.lease_until) FROM deliveries d
      WHERE d.webhook_id = q.webhook_id AND d.due_at IS NOT NULL AND d.lease_until IS NOT NULL
        AND d.lease_until > $1) AS first_lease_end,
    (SELECT d.due_at FROM deliveries d
      WHERE d.webhook_id = q.webhook_id AND d.due_at IS NOT NULL
        AND (d.lease_until IS NULL OR d.lease_until <= $1)
      ORDER BY d.due_at, d.id LIMIT 1) AS head_due_at,
    (SELECT count(*) FROM (
      SELECT 1 FROM deliveries d
      WHERE d.webhook_id = q.webhook_id AND d.due_at <= $1
        AND (d.lease_until IS NULL OR d.lease_until <= $1)
      ORDER BY d.due_at, d.id LIMIT $2) w) AS waiting`

const backlogJoins = `LEFT JOIN webhook_endpoints e ON e.id = q.webhook_id
  LEFT JOIN webhook_pacing p ON p.webhook_id = q.webhook_id`

// The queued endpoints whose claim lock this transaction holds: a bigint advisory lock shows
// in pg_locks as its high half (classid) and its low half (objid), objsubid 1.
const HELD_BACKLOGS = `SELECT ${backlogColumns} FROM (${QUEUED_ENDPOINTS}) q ${backlogJoins}
  WHERE ${CLAIM_LOCK_KEY("q.webhook_id")} IN (
    SELECT (l.classid::bigint << 32) | l.objid::bigint FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.pid = pg_backend_pid())`

const ALL_BACKLOGS = `SELECT ${backlogColumns} FROM (${QUEUED_ENDPOINTS}) q ${backlogJoins}`

/**
 * The backlogs of the queued endpoints this transaction holds the claim lock of (a claim,
 * after `lockQueuedEndpoints`: a statement of its own, so that its snapshot comes after the
 * locks), or, with `held` false, of every queued endpoint.
 */
export const backlogsStatement = (at: number, waitingMax: number, held: boolean): SqlText => ({
  text: held ? HELD_BACKLOGS : ALL_BACKLOGS,
  values: [new Date(at), waitingMax]
})

const LEASE = `UPDATE deliveries SET lease_until = $1, claim_token = $2
  WHERE id IN (SELECT p.id FROM unnest(string_to_array($3::text, ','), string_to_array($4::text, ',')::int[])
      AS t(webhook_id, count)
    CROSS JOIN LATERAL (SELECT d.id FROM deliveries d
      WHERE d.webhook_id = t.webhook_id AND d.due_at <= $5
        AND (d.lease_until IS NULL OR d.lease_until <= $5)
      ORDER BY d.due_at, d.id LIMIT t.count) p)
  RETURNING *`

/** What sending an attempt needs, each row as json, for rows `x` of (id, webhook_id, event_id). */
const SOURCE_COLUMNS = `x.id AS delivery_id, row_to_json(w) AS endpoint, row_to_json(ws) AS workspace,
    row_to_json(e) AS event, row_to_json(s) AS submission, row_to_json(b) AS bot, row_to_json(c) AS contact,
    CASE WHEN s.id IS NULL THEN NULL ELSE
      (SELECT coalesce(json_agg(m ORDER BY m.position), '[]'::json) FROM messages m WHERE m.submission_id = s.id)
    END AS messages`

const SOURCE_JOINS = `LEFT JOIN webhook_endpoints w ON w.id = x.webhook_id
  LEFT JOIN workspaces ws ON ws.id = w.workspace_id
  LEFT JOIN domain_events e ON e.id = x.event_id
  LEFT JOIN submissions s ON e.type = 'submission.completed' AND s.id = e.submission_id
    AND s.workspace_id = e.workspace_id AND s.intake_bot_id = e.intake_bot_id
  LEFT JOIN intake_bots b ON e.type = 'submission.completed' AND b.id = e.intake_bot_id
  LEFT JOIN contacts c ON e.type = 'contact.created' AND c.id = e.contact_id AND c.workspace_id = e.workspace_id`

// The leased rows with what sending them needs: one statement for the claim's last step.
const LEASED_WITH_SOURCES = `SELECT x.*, ${SOURCE_COLUMNS} FROM leased x ${SOURCE_JOINS}`

const LEASE_WITH_SOURCES = `WITH leased AS (${LEASE}) ${LEASED_WITH_SOURCES}`

const LEASE_AND_PACE = `WITH leased AS (${LEASE}), paced AS (
    INSERT INTO webhook_pacing (webhook_id, next_send_at)
    SELECT * FROM unnest(string_to_array($6::text, ','), string_to_array($7::text, ',')::timestamptz[])
    ON CONFLICT (webhook_id) DO UPDATE SET next_send_at = EXCLUDED.next_send_at)
  ${LEASED_WITH_SOURCES}`

/**
 * Leases each endpoint's first `count` waiting attempts (under its claim lock: the ones the
 * counts saw), returning the rows with what sending each needs (as `dispatchSourcesStatement`
 * reads it); with `pacing`, moves those endpoints' next allowed send.
 */
export const leaseStatement = (
  now: number,
  leaseUntil: number,
  claimToken: string,
  counts: ReadonlyMap<string, number>,
  pacing: ReadonlyArray<{ readonly webhookId: string; readonly at: number }>
): SqlText => {
  const values: Array<unknown> = [
    new Date(leaseUntil),
    claimToken,
    idList([...counts.keys()]),
    [...counts.values()].join(","),
    new Date(now)
  ]
  if (pacing.length === 0) return { text: LEASE_WITH_SOURCES, values }
  values.push(idList(pacing.map((p) => p.webhookId)), pacing.map((p) => iso(p.at)).join(","))
  return { text: LEASE_AND_PACE, values }
}

const DISPATCH_SOURCES = `SELECT ${SOURCE_COLUMNS}
  FROM unnest(string_to_array($1::text, ','), string_to_array($2::text, ','), string_to_array($3::text, ','))
    AS x(id, webhook_id, event_id)
  ${SOURCE_JOINS}`

/** What sending each attempt needs, each row as json (dispatch-sources.ts reads them). */
export const dispatchSourcesStatement = (deliveries: ReadonlyArray<Delivery>): SqlText => ({
  text: DISPATCH_SOURCES,
  values: [
    idList(deliveries.map((d) => d.id)),
    idList(deliveries.map((d) => d.webhookId)),
    idList(deliveries.map((d) => d.eventId))
  ]
})

export const lockEndpointsStatement = (ids: ReadonlyArray<string>): SqlText => ({
  text: `SELECT * FROM webhook_endpoints WHERE id = ANY(string_to_array($1::text, ',')) ORDER BY id FOR UPDATE`,
  values: [idList(ids)]
})

// The claim token's rows only; the ids' ANY lets the primary key serve the join (json rows
// are estimated at a hundred, and a scan of the whole table was planned).
// `fresh` locks the batch's attempts still held by this claim; when any is not (`lost`),
// nothing is written and the statement answers the lost ids, so the COMMIT it carries
// commits nothing and the caller writes the others again without them.
const COMPLETE_MANY = `WITH input AS (
    SELECT * FROM json_to_recordset($1::json)
      AS x(id text, status text, response_status integer, response_body text, error text,
           duration_ms integer, next_retry_at timestamptz, sent_at timestamptz)
  ), fresh AS (
    SELECT d.id FROM deliveries d
    WHERE d.id = ANY(string_to_array($2::text, ',')) AND d.due_at IS NOT NULL AND d.claim_token = $3
    FOR UPDATE
  ), lost AS (
    SELECT i.id FROM input i WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.id = i.id)
  ), done AS (
    UPDATE deliveries d SET status = i.status, response_status = i.response_status,
      response_body = i.response_body, error = i.error, duration_ms = i.duration_ms,
      next_retry_at = i.next_retry_at, sent_at = i.sent_at, due_at = NULL, lease_until = NULL,
      claim_token = NULL
    FROM input i
    WHERE d.id = ANY(string_to_array($2::text, ',')) AND d.id = i.id
      AND d.id IN (SELECT id FROM fresh) AND NOT EXISTS (SELECT 1 FROM lost)
    RETURNING d.id
  ), queued AS (
    INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, trigger, status, created_at, due_at)
    SELECT r.id, r.webhook_id, r.event_id, r.event_type, r.attempt, r.trigger, 'pending', r.created_at, r.due_at
    FROM json_to_recordset($4::json)
      AS r(id text, webhook_id text, event_id text, event_type text, attempt integer, trigger text,
           created_at timestamptz, due_at timestamptz)
    WHERE NOT EXISTS (SELECT 1 FROM lost)
  ), health AS (
    UPDATE webhook_endpoints e SET status = x.status,
      last_delivery_at = x.last_delivery_at, last_delivery_ok = x.last_delivery_ok,
      consecutive_fails = x.consecutive_fails, failing_since = x.failing_since,
      circuit_open_until = x.circuit_open_until, updated_at = x.updated_at
    FROM json_to_recordset($5::json)
      AS x(id text, status text, last_delivery_at timestamptz, last_delivery_ok boolean,
           consecutive_fails integer, failing_since timestamptz, circuit_open_until timestamptz,
           updated_at timestamptz)
    WHERE e.id = x.id AND NOT EXISTS (SELECT 1 FROM lost)
  )
  SELECT i.id FROM input i, (SELECT set_config('synchronous_commit', 'off', true)) AS commit_setting
  WHERE i.id IN (SELECT id FROM lost)`

/**
 * The finished records, their retries and the endpoints' delivery state (status, last
 * delivery, streak, circuit: nothing else of them) in one statement, written only when the
 * claim of every attempt is still `claimToken`'s; otherwise nothing is written and it
 * answers the ids whose claim is not. Its commit need not wait for the WAL flush: losing it
 * in a crash only means the attempts are sent again when their leases end (at least once
 * holds).
 */
export const completeManyStatement = (
  attempts: ReadonlyArray<{
    readonly finished: Delivery
    readonly next: { readonly delivery: Delivery; readonly dueAt: number } | null
  }>,
  claimToken: string,
  health: ReadonlyArray<WebhookEndpoint>
): SqlText => ({
  text: COMPLETE_MANY,
  values: [
    JSON.stringify(
      attempts.map(({ finished: f }) => ({
        id: f.id,
        status: f.status,
        response_status: f.responseStatus,
        response_body: f.responseBody,
        error: f.error,
        duration_ms: f.durationMs,
        next_retry_at: isoOrNull(f.nextRetryAt),
        sent_at: isoOrNull(f.sentAt)
      }))
    ),
    idList(attempts.map(({ finished }) => finished.id)),
    claimToken,
    JSON.stringify(
      attempts.flatMap(({ next }) =>
        next === null
          ? []
          : [
              {
                id: next.delivery.id,
                webhook_id: next.delivery.webhookId,
                event_id: next.delivery.eventId,
                event_type: next.delivery.eventType,
                attempt: next.delivery.attempt,
                trigger: next.delivery.trigger,
                created_at: iso(next.delivery.createdAt),
                due_at: iso(next.dueAt)
              }
            ]
      )
    ),
    JSON.stringify(
      health.map((e) => ({
        id: e.id,
        status: e.status,
        last_delivery_at: isoOrNull(e.lastDeliveryAt),
        last_delivery_ok: e.lastDeliveryOk,
        consecutive_fails: e.consecutiveFails,
        failing_since: isoOrNull(e.failingSince),
        circuit_open_until: isoOrNull(e.circuitOpenUntil),
        updated_at: iso(e.updatedAt)
      }))
    )
  ]
})

// The gate moves only when the last gated send is far enough behind; otherwise the row as it
// was tells when the next may start.
const RESERVE_SEND = `WITH reserved AS (
    INSERT INTO webhook_pacing AS p (webhook_id, next_send_at, last_sent_at) VALUES ($1, $2, $2)
    ON CONFLICT (webhook_id) DO UPDATE SET last_sent_at = EXCLUDED.last_sent_at
      WHERE p.last_sent_at IS NULL OR p.last_sent_at <= $3
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM reserved) AS reserved,
    (SELECT last_sent_at FROM webhook_pacing WHERE webhook_id = $1) AS last_sent_at`

export const reserveSendStatement = (webhookId: string, at: number, spacingMs: number): SqlText => ({
  text: RESERVE_SEND,
  values: [webhookId, new Date(at), new Date(at - spacingMs)]
})
