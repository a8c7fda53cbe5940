/**
 * The schema, as an ordered list of migrations. Applied migrations are never edited:
 * a change is a new entry. The SQL runs on Postgres 15 (production, CI) and on PGlite's
 * Postgres 18 alike.
 *
 * Conventions: ids are `text COLLATE "C"` so that the database orders them byte-wise,
 * as the domain's cursors do; timestamps are `timestamptz(3)` (a JS Date has
 * milliseconds); documents are `json`, not `jsonb`, so that a stored response or a
 * submission's data comes back with its keys in the order they were given.
 */
/** The SQLSTATE of `intake_quota_used_up` (migration 9): a class of Intake's own. */
export const QUOTA_USED_UP_SQLSTATE = "IQ429"

/** The SQLSTATE of `intake_idempotency_record_exists` (migration 10). */
export const IDEMPOTENCY_RECORD_EXISTS_SQLSTATE = "IQ409"

/** The SQLSTATE of `intake_idempotency_claim_not_fresh` (migration 12). */
export const IDEMPOTENCY_CLAIM_NOT_FRESH_SQLSTATE = "IQ412"

export interface Migration {
  readonly id: number
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

export const migrations: ReadonlyArray<Migration> = [
  {
    id: 1,
    name: "initial schema",
    statements: [
      `CREATE TABLE workspaces (
        id text COLLATE "C" PRIMARY KEY,
        name text NOT NULL,
        plan text NOT NULL,
        status text NOT NULL,
        monthly_submission_quota integer,
        rate_limit_per_minute integer,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`,
      `CREATE TABLE api_keys (
        id text COLLATE "C" PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        name text,
        key_hash text COLLATE "C" NOT NULL UNIQUE,
        scopes json NOT NULL,
        expires_at timestamptz(3),
        revoked_at timestamptz(3),
        last_used_at timestamptz(3),
        created_at timestamptz(3) NOT NULL
      )`,
      `CREATE INDEX api_keys_workspace ON api_keys (workspace_id)`,
      `CREATE TABLE intake_bots (
        id text COLLATE "C" PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL,
        status text NOT NULL,
        share_slug text COLLATE "C" NOT NULL UNIQUE,
        schema json NOT NULL,
        schema_version integer NOT NULL,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`,
      // The list order and filter: a workspace's bots, newest first.
      `CREATE INDEX intake_bots_list ON intake_bots (workspace_id, created_at DESC, id DESC)`,
      `CREATE TABLE submissions (
        id text COLLATE "C" PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        intake_bot_id text COLLATE "C" NOT NULL REFERENCES intake_bots (id) ON DELETE CASCADE,
        data json NOT NULL,
        status text NOT NULL,
        ai_summary text NOT NULL,
        is_test boolean NOT NULL,
        file_count integer NOT NULL,
        schema_version integer NOT NULL,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`,
      // Serves the list (a bot's submissions, newest first, within a created range).
      `CREATE INDEX submissions_list ON submissions (intake_bot_id, created_at DESC, id DESC)`,
      `CREATE INDEX submissions_workspace ON submissions (workspace_id)`,
      `CREATE TABLE messages (
        id text COLLATE "C" PRIMARY KEY,
        submission_id text COLLATE "C" NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
        position integer NOT NULL,
        role text NOT NULL,
        content text NOT NULL,
        created_at timestamptz(3) NOT NULL,
        UNIQUE (submission_id, position)
      )`,
      `CREATE TABLE submission_usage (
        workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        period text COLLATE "C" NOT NULL,
        used integer NOT NULL,
        PRIMARY KEY (workspace_id, period)
      )`,
      `CREATE TABLE contacts (
        id text COLLATE "C" PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        email text NOT NULL,
        name text,
        created_at timestamptz(3) NOT NULL
      )`,
      `CREATE UNIQUE INDEX contacts_email ON contacts (workspace_id, lower(email))`,
      // The outbox names its sources without foreign keys: an event outlives its
      // submission, so a redelivery can tell that the source is gone.
      `CREATE TABLE domain_events (
        id text COLLATE "C" PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL,
        type text NOT NULL,
        intake_bot_id text COLLATE "C" NOT NULL,
        submission_id text COLLATE "C" NOT NULL,
        contact_id text COLLATE "C",
        created_at timestamptz(3) NOT NULL
      )`,
      `CREATE INDEX domain_events_created ON domain_events (created_at, id)`,
      `CREATE TABLE webhook_endpoints (
        id text COLLATE "C" PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL,
        url text NOT NULL,
        events json NOT NULL,
        status text NOT NULL,
        description text NOT NULL,
        intake_bot_ids json NOT NULL,
        secret text NOT NULL,
        last_delivery_at timestamptz(3),
        last_delivery_ok boolean,
        consecutive_fails integer NOT NULL,
        failing_since timestamptz(3),
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`,
      `CREATE INDEX webhook_endpoints_list ON webhook_endpoints (workspace_id, created_at DESC, id DESC)`,
      `CREATE TABLE idempotency_records (
        api_key_id text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        fingerprint text NOT NULL,
        response json NOT NULL,
        created_at timestamptz(3) NOT NULL,
        expires_at timestamptz(3) NOT NULL,
        PRIMARY KEY (api_key_id, key)
      )`,
      `CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at)`
    ]
  },
  {
    id: 2,
    name: "webhook deliveries",
    statements: [
      // Every attempt, finished or pending. The queue is the pending rows: due_at is set
      // while an attempt waits, lease_until and claim_token while a dispatcher holds it.
      // No foreign key to the endpoint: the log outlives a deleted endpoint's claims.
      `CREATE TABLE deliveries (
        id text COLLATE "C" PRIMARY KEY,
        webhook_id text COLLATE "C" NOT NULL,
        event_id text COLLATE "C" NOT NULL,
        event_type text NOT NULL,
        attempt integer NOT NULL,
        trigger text NOT NULL,
        status text NOT NULL,
        response_status integer,
        response_body text,
        error text,
        duration_ms integer,
        next_retry_at timestamptz(3),
        created_at timestamptz(3) NOT NULL,
        due_at timestamptz(3),
        lease_until timestamptz(3),
        claim_token text COLLATE "C"
      )`,
      // The log of an endpoint, newest first.
      `CREATE INDEX deliveries_list ON deliveries (webhook_id, created_at DESC, id DESC)`,
      `CREATE INDEX deliveries_event ON deliveries (webhook_id, event_id)`,
      // The queue: only pending rows, earliest due first.
      `CREATE INDEX deliveries_due ON deliveries (due_at, id) WHERE due_at IS NOT NULL`
    ]
  },
  {
    id: 3,
    name: "bot submission counts",
    statements: [
      // The bots list read each bot's count from the submissions index, a scan as long as the
      // bot is large; a counter kept by a trigger costs one row update per insert or delete.
      `ALTER TABLE intake_bots ADD COLUMN submission_count bigint NOT NULL DEFAULT 0`,
      `CREATE FUNCTION intake_bots_count_submissions() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            UPDATE intake_bots SET submission_count = submission_count + 1 WHERE id = NEW.intake_bot_id;
          ELSE
            UPDATE intake_bots SET submission_count = submission_count - 1 WHERE id = OLD.intake_bot_id;
          END IF;
          RETURN NULL;
        END
      $$`,
      // The trigger before the count: creating it locks out writers to submissions until this
      // migration commits, so no row is inserted between the count and the trigger.
      `CREATE TRIGGER submissions_count AFTER INSERT OR DELETE ON submissions
        FOR EACH ROW EXECUTE FUNCTION intake_bots_count_submissions()`,
      `UPDATE intake_bots b SET submission_count = (SELECT count(*) FROM submissions s WHERE s.intake_bot_id = b.id)`
    ]
  },
  {
    id: 4,
    name: "summary jobs",
    statements: [
      // Submissions waiting for the model's summary (docs/summaries.md), leased like
      // delivery attempts. No foreign key: a job whose submission was deleted ends by itself.
      `CREATE TABLE summary_jobs (
        submission_id text COLLATE "C" PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL,
        intake_bot_id text COLLATE "C" NOT NULL,
        attempts integer NOT NULL,
        held_delivery_ids json NOT NULL,
        created_at timestamptz(3) NOT NULL,
        due_at timestamptz(3) NOT NULL,
        lease_until timestamptz(3),
        claim_token text COLLATE "C"
      )`,
      `CREATE INDEX summary_jobs_due ON summary_jobs (due_at, submission_id)`,
      // The few claimed jobs, so that the next due time is two index look-ups, not a scan of the backlog.
      `CREATE INDEX summary_jobs_claimed ON summary_jobs (lease_until) WHERE claim_token IS NOT NULL`
    ]
  },
  {
    id: 5,
    name: "delivery log filters and recovery",
    statements: [
      // When the request left for the receiver; null while pending and for attempts never
      // sent (skipped, dropped). Attempts logged before this migration keep null.
      `ALTER TABLE deliveries ADD COLUMN sent_at timestamptz(3)`,
      // The log's filters, each in the list order (docs/webhooks.md, The delivery log).
      `CREATE INDEX deliveries_status ON deliveries (webhook_id, status, created_at DESC, id DESC)`,
      `CREATE INDEX deliveries_event_type ON deliveries (webhook_id, event_type, created_at DESC, id DESC)`,
      // A submission's events (the log's submission_id filter).
      `CREATE INDEX domain_events_submission ON domain_events (submission_id)`,
      // A workspace's events in order of occurrence (recovery's window).
      `CREATE INDEX domain_events_workspace ON domain_events (workspace_id, created_at, id)`
    ]
  },
  {
    id: 6,
    name: "webhook secret rotation, disabled notices, retention",
    statements: [
      // The secret before the last rotation, signing beside the current one until it expires.
      `ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text`,
      `ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at timestamptz(3)`,
      // A webhook.disabled event's source: the endpoint, and why it was disabled.
      `ALTER TABLE domain_events ADD COLUMN webhook_id text COLLATE "C"`,
      `ALTER TABLE domain_events ADD COLUMN disabled_reason text`,
      // The retention purge: finished attempts by age, and the events that still have pending ones.
      `CREATE INDEX deliveries_finished_age ON deliveries (created_at) WHERE due_at IS NULL`,
      `CREATE INDEX deliveries_pending_event ON deliveries (event_id) WHERE due_at IS NOT NULL`
    ]
  },
  {
    id: 7,
    name: "webhook isolation",
    statements: [
      // docs/webhooks.md, "Isolation": the receiver's rate limit (deliveries per second, null
      // unlimited) and the circuit breaker (set while the circuit is open or half open).
      `ALTER TABLE webhook_endpoints ADD COLUMN rate_limit integer`,
      `ALTER TABLE webhook_endpoints ADD COLUMN circuit_open_until timestamptz(3)`,
      // When a rate-limited endpoint may send next. Its own table, written only by claims
      // (under the endpoint's claim lock), so a claim never waits on the endpoint's row lock.
      `CREATE TABLE webhook_pacing (
        webhook_id text COLLATE "C" PRIMARY KEY,
        next_send_at timestamptz(3) NOT NULL
      )`,
      // One endpoint's queue, earliest due first: its head, its leases, and the walk over
      // the endpoints that have pending attempts (one index probe each).
      `CREATE INDEX deliveries_queued ON deliveries (webhook_id, due_at, id) WHERE due_at IS NOT NULL`
    ]
  },
  {
    id: 8,
    name: "bot submission counts apart from the bots",
    statements: [
      // docs/performance.md, "Round trips of a create": the count of migration 3 lived on the bot's
      // row, so every create rewrote that row (a new version of the whole bot, schema included)
      // and the bot read and the foreign-key checks of every create walked its versions. The
      // count gets a narrow row of its own; the trigger keeps it, as before.
      `CREATE TABLE intake_bot_counts (
        intake_bot_id text COLLATE "C" PRIMARY KEY REFERENCES intake_bots (id) ON DELETE CASCADE,
        submissions bigint NOT NULL
      )`,
      // No insert or delete of a submission between the copy and the commit (they wait): the
      // trigger's new body is seen by other sessions only once this migration commits.
      `LOCK TABLE submissions IN SHARE MODE`,
      `CREATE OR REPLACE FUNCTION intake_bots_count_submissions() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            INSERT INTO intake_bot_counts (intake_bot_id, submissions) VALUES (NEW.intake_bot_id, 1)
              ON CONFLICT (intake_bot_id) DO UPDATE SET submissions = intake_bot_counts.submissions + 1;
          ELSE
            UPDATE intake_bot_counts SET submissions = submissions - 1 WHERE intake_bot_id = OLD.intake_bot_id;
          END IF;
          RETURN NULL;
        END
      $$`,
      `INSERT INTO intake_bot_counts (intake_bot_id, submissions)
        SELECT id, submission_count FROM intake_bots WHERE submission_count <> 0`
      // intake_bots.submission_count stays, no longer kept: instances of the previous version,
      // still serving during a rolling deploy, read it. A later migration drops it.
    ]
  },
  {
    id: 9,
    name: "a used-up quota fails its statement",
    statements: [
      // docs/performance.md, "Round trips of a create": a create's last statement may carry the
      // COMMIT, which PostgreSQL skips only when the statement fails. A reservation past the
      // quota therefore fails it, with the count it found in DETAIL (submissions.ts).
      `CREATE FUNCTION intake_quota_used_up(used bigint) RETURNS bigint LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION 'the monthly submission quota is used up'
            USING ERRCODE = '${QUOTA_USED_UP_SQLSTATE}', DETAIL = used::text;
        END
      $$`
    ]
  },
  {
    id: 10,
    name: "a stored response that finds another record fails",
    statements: [
      // Storing an idempotent response answers no rows, so that it can go with the unit of
      // work's next statement (docs/performance.md, "Round trips of a create"); finding a record
      // stored after the claim read, it fails instead (webhooks.ts).
      `CREATE FUNCTION intake_idempotency_record_exists() RETURNS boolean LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION 'another request stored a response for this idempotency key'
            USING ERRCODE = '${IDEMPOTENCY_RECORD_EXISTS_SQLSTATE}';
        END
      $$`
    ]
  },
  {
    id: 11,
    name: "a contact found or created within one statement",
    statements: [
      // A create's contact and its events are one statement, sent with the unit of work's
      // next one (docs/performance.md, "Round trips of a create"). A contact another transaction
      // commits while the insert waits on it is not in that statement's snapshot: each
      // statement of a (volatile) function takes a new one, so the read after the insert
      // finds it. Loops only if that contact is deleted in between.
      `CREATE FUNCTION intake_contact_for(
        p_id text, p_workspace_id text, p_email text, p_name text, p_created_at timestamptz
      ) RETURNS TABLE (contact_id text, created boolean) LANGUAGE plpgsql AS $$
        DECLARE
          known text;
        BEGIN
          LOOP
            INSERT INTO contacts (id, workspace_id, email, name, created_at)
              VALUES (p_id, p_workspace_id, p_email, p_name, p_created_at)
              ON CONFLICT (workspace_id, lower(email)) DO NOTHING;
            IF FOUND THEN
              RETURN QUERY SELECT p_id, true;
              RETURN;
            END IF;
            SELECT c.id INTO known FROM contacts c
              WHERE c.workspace_id = p_workspace_id AND lower(c.email) = lower(p_email);
            IF known IS NOT NULL THEN
              RETURN QUERY SELECT known, false;
              RETURN;
            END IF;
          END LOOP;
        END
      $$`
    ]
  },
  {
    id: 12,
    name: "a claim that is not fresh fails",
    statements: [
      // The claim of an idempotent POST answers no rows when it is fresh, so that it can go
      // with the unit of work's next statement (docs/performance.md, "Round trips of a create");
      // otherwise it fails, and a claim that reads the record tells why (webhooks.ts).
      `CREATE FUNCTION intake_idempotency_claim_not_fresh() RETURNS boolean LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION 'this idempotency key is held or has a stored response'
            USING ERRCODE = '${IDEMPOTENCY_CLAIM_NOT_FRESH_SQLSTATE}';
        END
      $$`
    ]
  },
  {
    id: 13,
    name: "a submission keeps its message count",
    statements: [
      // A submission's messages are written with it, in its create's statement, and never
      // added or removed apart from it: the create writes their count on the submission, and
      // a page reads it there instead of counting each row's messages (docs/performance.md,
      // "Lists"). NULL is "not kept": rows from before this migration, and rows an
      // instance of the previous version writes during a rolling deploy, are counted on read
      // as before. No backfill: adding a nullable column without a default rewrites nothing.
      `ALTER TABLE submissions ADD COLUMN message_count int`
    ]
  },
  {
    id: 14,
    name: "the delivery engine in batches",
    statements: [
      // A claim counts each endpoint's attempts in flight and finds its first lease's end
      // (deliveries.ts, backlogs): through this index it reads only the leased rows, not the
      // endpoint's whole queue, so a claim costs the same with 10 or 10,000 attempts waiting
      // (docs/webhooks.md, "How the engine sends").
      `CREATE INDEX deliveries_leased ON deliveries (webhook_id, lease_until)
        WHERE due_at IS NOT NULL AND lease_until IS NOT NULL`,
      // The rate limit's gate at the moment of sending (DeliveryRepository.reserveSend): when
      // the endpoint's last send started, so that no second sees more starts than its limit.
      `ALTER TABLE webhook_pacing ADD COLUMN last_sent_at timestamptz(3)`
    ]
  },
  {
    id: 15,
    name: "events keep the request that raised them",
    statements: [
      // One id end to end (docs/operations.md, Request ids): a create writes its X-Request-Id
      // on the
      // events it raises, in the statement that appends them, and every delivery attempt's log
      // line names it. NULL for events no request raised (a summary's release, a disable
      // notice) and for those from before this migration; nullable, so nothing is rewritten.
      `ALTER TABLE domain_events ADD COLUMN request_id text`
    ]
  },
  {
    id: 16,
    name: "events keep the trace of the request that raised them",
    statements: [
      // Traces (docs/operations.md, Traces): with OTEL_EXPORTER_OTLP_ENDPOINT set, a create
      // writes the W3C traceparent of its request's span on its events, and each delivery
      // attempt of an event is a span of that trace. NULL when traces are off, for events no
      // request raised and for those from before this migration; nullable, nothing rewritten.
      `ALTER TABLE domain_events ADD COLUMN trace_parent text`
    ]
  }
]
