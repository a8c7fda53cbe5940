/**
 * The delivery engine's use cases (docs/rules.md, Webhooks and deliveries): queue an event's attempts in
 * the unit of work that records the event; dispatch a claimed attempt (rebuild the
 * payload from its sources, sign it with Standard Webhooks, check the receiver's address,
 * send, log the attempt, update the endpoint's state, schedule the retry or give up);
 * send a test event or redeliver one at once; list an endpoint's attempts.
 */
import { Clock, Data, Duration, Effect, Either, Layer, Option, Schedule } from "effect"
import { Conflict, invalid, notFound, type StorageUnavailable } from "../errors.js"
import type {
  Delivery,
  DomainEvent,
  ListPosition,
  RecoverableEvent,
  WebhookDisabledReason,
  WebhookEndpoint
} from "../models.js"
import { sendSpacingMs } from "../policies/delivery-isolation.js"
import { afterAttempt, disabledBy } from "../policies/endpoint-health.js"
import {
  contactCreatedPayload,
  endpointTakes,
  submissionCompletedPayload,
  TEST_EVENT_TYPE,
  testPayload,
  type WebhookPayload,
  webhookDisabledEvent,
  webhookDisabledPayload
} from "../policies/event-payloads.js"
import { invertedRangeIssues } from "../policies/list-query.js"
import { deliveriesWithheld } from "../policies/plans.js"
import { retryAfterMillis, retryDelay } from "../policies/retry-schedule.js"
import { signatureHeaders } from "../policies/standard-webhooks.js"
import { signingSecrets } from "../policies/webhook-secret.js"
import {
  AddressResolver,
  type AttemptOutcome,
  ContactRepository,
  Crypto,
  DeliveryRepository,
  DeliveryWakeups,
  type DispatchSources,
  EventOutbox,
  type FinishedAttempt,
  Ids,
  IntakeBotRepository,
  ReceiverClient,
  SubmissionRepository,
  UnitOfWork,
  WebhookRepository,
  WorkspaceRepository
} from "../ports.js"
import { DeliverySettings, sendWindowMs } from "./delivery-settings.js"
import { listed, pageRequest } from "./lists.js"
import { verifyReceiverUrl } from "./receiver-address.js"
import { type AttemptMade, Deliveries, type PreparedAttempt, type SendResult } from "./services.js"
import { WebhookSettings } from "./webhook-settings.js"

/** The most of a receiver's answer an attempt keeps. */
export const RESPONSE_BODY_LIMIT = 1024
export const USER_AGENT = "Intake-Webhooks/1"

/**
 * One pending attempt of each event for every endpoint of `endpoints` that takes it
 * (only ACTIVE endpoints may be given), created at `now`.
 */
export const pendingAttemptsFor = (
  events: ReadonlyArray<DomainEvent>,
  endpoints: ReadonlyArray<WebhookEndpoint>,
  now: number,
  ids: Ids["Type"]
): ReadonlyArray<Delivery> => {
  const queued: Array<Delivery> = []
  for (const event of events)
    for (const endpoint of endpoints)
      if (endpointTakes(endpoint, event))
        queued.push(
          pendingAttempt({
            id: ids.at("dlv", now),
            webhookId: endpoint.id,
            eventId: event.id,
            eventType: event.type,
            attempt: 1,
            trigger: "event",
            createdAt: now
          })
        )
  return queued
}

/**
 * One `skipped` attempt of each event for every endpoint of `endpoints` (paused or
 * disabled ones) that takes it: recorded, never sent, never retried; recover queues it again.
 */
export const skippedAttemptsFor = (
  events: ReadonlyArray<DomainEvent>,
  endpoints: ReadonlyArray<WebhookEndpoint>,
  now: number,
  ids: Ids["Type"]
): ReadonlyArray<Delivery> =>
  pendingAttemptsFor(events, endpoints, now, ids).map((attempt) => {
    const endpoint = endpoints.find((candidate) => candidate.id === attempt.webhookId)
    return {
      ...attempt,
      status: "skipped" as const,
      error: `not sent: the webhook is ${endpoint?.status ?? "not active"}`
    }
  })

/** Events a recovery reads (and queues) at a time: a long window is queued in batches. */
export const RECOVER_BATCH = 500

/**
 * Queues one pending attempt of each event for every ACTIVE endpoint that takes it.
 * Called inside the unit of work that records the events, so an event and its attempts
 * commit together. Answers how many attempts were queued.
 */
export const queueDeliveries = (
  events: ReadonlyArray<DomainEvent>,
  now: number
): Effect.Effect<number, StorageUnavailable, DeliveryRepository | Ids> =>
  Effect.gen(function* () {
    if (events.length === 0) return 0
    const repository = yield* DeliveryRepository
    const workspaces = [...new Set(events.map((event) => event.workspaceId))]
    const endpoints = (yield* Effect.forEach(workspaces, repository.activeEndpoints)).flat()
    const queued = pendingAttemptsFor(events, endpoints, now, yield* Ids)
    if (queued.length > 0) yield* repository.enqueue(queued, now)
    return queued.length
  })

const pendingAttempt = (
  fields: Pick<Delivery, "id" | "webhookId" | "eventId" | "eventType" | "attempt" | "trigger" | "createdAt">
): Delivery => ({
  ...fields,
  status: "pending",
  responseStatus: null,
  responseBody: null,
  error: null,
  durationMs: null,
  nextRetryAt: null,
  sentAt: null
})

/**
 * How a claimed attempt rides out a database blip (docs/choices.md, Webhooks): its writes
 * are tried again after 0.1, 0.2, 0.4, 0.8, 1.6 and 3.2 s, so a blip of a few seconds
 * costs no lease (15 s) and no second send.
 */
export const STORE_RETRY = Schedule.exponential(Duration.millis(100)).pipe(
  Schedule.intersect(Schedule.recurs(6))
)

const retriedOnStorage = <A, E extends { readonly _tag: string }, R>(write: Effect.Effect<A, E, R>) =>
  Effect.retry(write, { schedule: STORE_RETRY, while: (error) => error._tag === "StorageUnavailable" })

/** The source of an event is gone: its payload cannot be rebuilt. */
class SourceGone extends Data.TaggedError("SourceGone")<{ readonly what: string }> {}

/** Claims that ran out while their attempts were under way: another dispatcher owns them now. */
class LostClaims extends Data.TaggedError("LostClaims")<{ readonly ids: ReadonlyArray<string> }> {}

export const DeliveriesLive = Layer.effect(
  Deliveries,
  Effect.gen(function* () {
    const repository = yield* DeliveryRepository
    const webhooks = yield* WebhookRepository
    const workspaces = yield* WorkspaceRepository
    const outbox = yield* EventOutbox
    const submissions = yield* SubmissionRepository
    const bots = yield* IntakeBotRepository
    const contacts = yield* ContactRepository
    const client = yield* ReceiverClient
    const resolver = yield* AddressResolver
    const crypto = yield* Crypto
    const ids = yield* Ids
    const uow = yield* UnitOfWork
    const webhookSettings = yield* WebhookSettings
    const settings = yield* DeliverySettings

    const findOwn = (workspaceId: string, webhookId: string) =>
      Effect.flatMap(
        webhooks.findInWorkspace(workspaceId, webhookId),
        Option.match({ onNone: () => Effect.fail(notFound("webhook")), onSome: Effect.succeed })
      )

    const gone = (what: string) => Effect.fail(new SourceGone({ what }))

    /** The payload of an outbox event, rebuilt from its sources as they are now. */
    const eventPayload = (event: DomainEvent) =>
      Effect.gen(function* () {
        if (event.type === "webhook.disabled") {
          const endpoint =
            event.webhookId === undefined ? Option.none() : yield* repository.endpoint(event.webhookId)
          if (Option.isNone(endpoint)) return yield* gone("webhook endpoint")
          return webhookDisabledPayload(event, endpoint.value) as WebhookPayload
        }
        if (event.type === "submission.completed") {
          const submission = yield* submissions.findInBot(
            event.workspaceId,
            event.intakeBotId,
            event.submissionId
          )
          if (Option.isNone(submission)) return yield* gone("submission")
          const bot = yield* bots.findById(event.intakeBotId)
          if (Option.isNone(bot)) return yield* gone("intake bot")
          return submissionCompletedPayload(event, submission.value, bot.value) as WebhookPayload
        }
        const contact =
          event.contactId === null
            ? Option.none()
            : yield* contacts.findById(event.workspaceId, event.contactId)
        if (Option.isNone(contact)) return yield* gone("contact")
        return contactCreatedPayload(event, contact.value) as WebhookPayload
      })

    /** The payload of any attempt: a test event is its own source; others come from the outbox. */
    const payloadOf = (delivery: Delivery) =>
      Effect.gen(function* () {
        if (delivery.eventType === TEST_EVENT_TYPE) {
          const first = (yield* repository.attemptsOf(delivery.webhookId, delivery.eventId))[0] ?? delivery
          return testPayload(delivery.eventId, delivery.webhookId, first.createdAt) as WebhookPayload
        }
        const event = yield* outbox.findById(delivery.eventId)
        if (Option.isNone(event)) return yield* gone("event")
        return yield* eventPayload(event.value)
      })

    /**
     * Signs and sends; a refused address or an unreachable receiver is a failed attempt, not an
     * error. `gatedAt`: the moment a rate limit's gate let it start, which is then its `sent_at`
     * (the gate spaces those, docs/webhooks.md, "How the engine sends").
     */
    const send = (endpoint: WebhookEndpoint, payload: WebhookPayload, gatedAt?: number) =>
      Effect.gen(function* () {
        const startedAt = gatedAt ?? (yield* Clock.currentTimeMillis)
        const body = JSON.stringify(payload)
        // During a rotation's grace period the previous secret signs too (docs/webhooks.md, "Secret rotation").
        const [secret, ...previous] = signingSecrets(endpoint, startedAt)
        const headers = {
          "content-type": "application/json",
          "user-agent": USER_AGENT,
          ...signatureHeaders(
            crypto.hmacSha256,
            {
              secret: secret ?? endpoint.secret,
              messageId: payload.id,
              timestampSeconds: Math.floor(startedAt / 1000),
              body
            },
            previous
          )
        }
        let sentAt: number | null = null
        const outcome = yield* verifyReceiverUrl(endpoint.url, webhookSettings).pipe(
          Effect.provideService(AddressResolver, resolver),
          Effect.zipRight(Effect.map(Clock.currentTimeMillis, (at) => (sentAt = gatedAt ?? at))),
          Effect.flatMap(() => client.send({ url: endpoint.url, headers, body })),
          Effect.either
        )
        const durationMs = (yield* Clock.currentTimeMillis) - startedAt
        if (Either.isLeft(outcome)) {
          const error = outcome.left
          const message =
            error._tag === "ValidationFailed"
              ? `not sent: the receiver URL ${error.issues.map((issue) => issue.message).join("; ")}`
              : error._tag === "StorageUnavailable"
                ? "not sent: the receiver's name could not be resolved"
                : error.message
          return {
            ok: false,
            responseStatus: null,
            responseBody: null,
            error: message,
            retryAfter: null,
            durationMs,
            startedAt,
            sentAt
          } satisfies SendResult
        }
        const response = outcome.right
        return {
          ok: response.status >= 200 && response.status < 300,
          responseStatus: response.status,
          responseBody: response.body.slice(0, RESPONSE_BODY_LIMIT),
          error: null,
          retryAfter: response.retryAfter,
          durationMs,
          startedAt,
          sentAt
        } satisfies SendResult
      })

    const finishedAttempt = (
      pending: Delivery,
      result: SendResult,
      nextRetryAt: number | null
    ): Delivery => ({
      ...pending,
      status: result.ok ? "succeeded" : "failed",
      responseStatus: result.responseStatus,
      responseBody: result.responseBody,
      error: result.error,
      durationMs: result.durationMs,
      nextRetryAt,
      sentAt: result.sentAt
    })

    const outcomeOf = (result: SendResult): AttemptOutcome => ({
      ok: result.ok,
      responseStatus: result.responseStatus,
      at: result.startedAt,
      durationMs: result.durationMs
    })

    /**
     * Applies an attempt's outcome to its endpoint, inside the caller's unit of work. When
     * this outcome disabled the endpoint, a webhook.disabled event is queued in the same
     * unit of work for the workspace's other active endpoints that subscribe to it.
     */
    const recordOutcome = (webhookId: string, outcome: AttemptOutcome) =>
      Effect.gen(function* () {
        const recorded = yield* repository.recordOutcome(
          webhookId,
          outcome,
          settings.disableAfterMs,
          settings.isolation
        )
        if (Option.isNone(recorded)) return { endpoint: Option.none<WebhookEndpoint>(), disabled: null }
        const { endpoint, previousStatus } = recorded.value
        const reason = disabledBy(previousStatus, endpoint, outcome)
        const disabled = reason === null ? null : yield* queueDisabledNotice(endpoint, reason, outcome.at)
        return { endpoint: Option.some(endpoint), disabled }
      })

    const queueDisabledNotice = (endpoint: WebhookEndpoint, reason: WebhookDisabledReason, at: number) =>
      Effect.gen(function* () {
        const event = webhookDisabledEvent(yield* ids.next("evt"), endpoint, reason, at)
        // The endpoint is disabled by now: it is not among the active ones.
        const subscribers = yield* repository.activeEndpoints(endpoint.workspaceId)
        const queued = pendingAttemptsFor([event], subscribers, at, ids)
        yield* outbox.append([event], { deliveries: queued, dueAt: at })
        return { endpoint, reason, notified: queued.length }
      })

    /** The one line saying an endpoint was disabled, and why; logged once its unit of work committed. */
    const logDisabled = (
      disabled: { endpoint: WebhookEndpoint; reason: WebhookDisabledReason; notified: number } | null
    ) =>
      disabled === null
        ? Effect.void
        : Effect.logWarning({
            message: "webhook endpoint disabled",
            webhookId: disabled.endpoint.id,
            workspaceId: disabled.endpoint.workspaceId,
            reason:
              disabled.reason === "gone"
                ? "the receiver answered 410 Gone"
                : "deliveries failed for WEBHOOK_DISABLE_AFTER",
            notifiedEndpoints: disabled.notified
          })

    /**
     * The payload of a claimed attempt from the sources its claim read; the rare kinds whose
     * sources are not among them (a test event, webhook.disabled) are read as `payloadOf` reads them.
     */
    const payloadFromSources = (delivery: Delivery, sources: DispatchSources | undefined) =>
      Effect.gen(function* () {
        if (sources === undefined || delivery.eventType === TEST_EVENT_TYPE) return yield* payloadOf(delivery)
        const event = sources.event
        if (event === null) return yield* gone("event")
        if (event.type === "submission.completed") {
          if (sources.submission === null) return yield* gone("submission")
          if (sources.bot === null) return yield* gone("intake bot")
          return submissionCompletedPayload(event, sources.submission, sources.bot) as WebhookPayload
        }
        if (event.type === "contact.created") {
          if (sources.contact === null) return yield* gone("contact")
          return contactCreatedPayload(event, sources.contact) as WebhookPayload
        }
        return yield* eventPayload(event)
      })

    /** Send it, or why it is closed unsent: the endpoint gone, paused or disabled, the workspace withheld, the source gone. */
    const prepareOne = (
      delivery: Delivery,
      sources: DispatchSources | undefined,
      sendBy: number
    ): Effect.Effect<PreparedAttempt, StorageUnavailable> =>
      Effect.gen(function* () {
        const event = sources?.event ?? null
        const drop = (error: string): PreparedAttempt => ({ _tag: "Drop", delivery, error, event })
        const endpoint =
          sources === undefined
            ? Option.getOrNull(yield* repository.endpoint(delivery.webhookId))
            : sources.endpoint
        if (endpoint === null) return drop("not sent: the webhook was deleted")
        if (endpoint.status !== "active") return drop(`not sent: the webhook is ${endpoint.status}`)
        const workspace =
          sources === undefined
            ? Option.getOrNull(yield* workspaces.findById(endpoint.workspaceId))
            : sources.workspace
        const withheld = workspace === null ? "the workspace no longer exists" : deliveriesWithheld(workspace)
        if (withheld !== null) return drop(`not sent: ${withheld}`)
        return yield* payloadFromSources(delivery, sources).pipe(
          Effect.map(
            (payload): PreparedAttempt => ({ _tag: "Send", delivery, endpoint, payload, sendBy, event })
          ),
          Effect.catchTag("SourceGone", (source) =>
            Effect.succeed(drop(`not sent: the ${source.what} no longer exists`))
          )
        )
      })

    const prepare = (
      deliveries: ReadonlyArray<Delivery>,
      claimedAt?: number,
      read?: ReadonlyMap<string, DispatchSources>
    ) =>
      Effect.gen(function* () {
        const sendBy = (claimedAt ?? (yield* Clock.currentTimeMillis)) + sendWindowMs(settings)
        const sources = read ?? (yield* repository.dispatchSources(deliveries))
        return yield* Effect.forEach(deliveries, (delivery) =>
          prepareOne(delivery, sources.get(delivery.id), sendBy)
        )
      })

    /**
     * When an attempt may start: at once, or for an endpoint with a rate limit when its gate
     * lets it (waiting for its turn); null when its send window ends first.
     */
    const startTime = (endpoint: WebhookEndpoint, sendBy: number) =>
      Effect.gen(function* () {
        for (;;) {
          const now = yield* Clock.currentTimeMillis
          if (now > sendBy) return null
          if (endpoint.rateLimit === null) return now
          const next = yield* repository.reserveSend(endpoint.id, now, sendSpacingMs(endpoint.rateLimit))
          if (next === null) return now
          if (next > sendBy) return null
          yield* Effect.sleep(Duration.millis(Math.max(1, next - now)))
        }
      })

    const attempt = (prepared: PreparedAttempt): Effect.Effect<AttemptMade, StorageUnavailable> =>
      prepared._tag === "Drop"
        ? Effect.succeed({
            _tag: "Dropped",
            delivery: prepared.delivery,
            error: prepared.error,
            event: prepared.event ?? null
          })
        : Effect.gen(function* () {
            const delivery = prepared.delivery
            // Past its send window the attempt could still run when its lease ends and another
            // dispatcher takes it: it is given back unsent instead.
            const startAt = yield* startTime(prepared.endpoint, prepared.sendBy)
            if (startAt === null) return { _tag: "Expired", delivery }
            const result = yield* send(
              prepared.endpoint,
              prepared.payload,
              prepared.endpoint.rateLimit === null ? undefined : startAt
            )
            const finishedAt = yield* Clock.currentTimeMillis
            const delay = result.ok
              ? null
              : retryDelay({
                  schedule: settings.retrySchedule,
                  failedAttempt: yield* placeInSchedule(delivery),
                  random: random() / 2 ** 32,
                  responseStatus: result.responseStatus,
                  retryAfterMs: retryAfterMillis(result.retryAfter, finishedAt)
                })
            const retry = delay === null ? null : { dueAt: finishedAt + delay, id: yield* ids.next("dlv") }
            return { _tag: "Sent", delivery, result, retry, finishedAt, event: prepared.event ?? null }
          })

    /** The retry of a failed attempt, queued when its endpoint is still active after the outcome. */
    const retryOf = (made: Extract<AttemptMade, { _tag: "Sent" }>) =>
      made.retry === null
        ? null
        : {
            delivery: pendingAttempt({
              id: made.retry.id,
              webhookId: made.delivery.webhookId,
              eventId: made.delivery.eventId,
              eventType: made.delivery.eventType,
              attempt: made.delivery.attempt + 1,
              trigger: "retry",
              // Strictly after the attempt it follows, so the log's order (newest first) holds.
              createdAt: Math.max(made.finishedAt, made.delivery.createdAt + 1)
            }),
            dueAt: made.retry.dueAt
          }

    /**
     * One unit of work for a batch of attempts: the endpoints' rows locked (in id order), each
     * outcome applied in turn (EndpointHealth.afterAttempt), retries queued for the endpoints
     * still active, every finished record, retry and endpoint state written in one statement,
     * which usually carries the commit. Fails with LostClaims, writing nothing, when another
     * dispatcher took any over.
     */
    const writeBatch = (made: ReadonlyArray<AttemptMade>, claimToken: string) =>
      uow.transaction(
        Effect.gen(function* () {
          const endpointIds = [
            ...new Set(made.flatMap((m) => (m._tag === "Sent" ? [m.delivery.webhookId] : [])))
          ].sort()
          const health = new Map(
            (endpointIds.length === 0 ? [] : yield* repository.lockEndpoints(endpointIds)).map((e) => [
              e.id,
              e
            ])
          )
          const changed = new Set<string>()
          const disabled: Array<{ endpoint: WebhookEndpoint; reason: WebhookDisabledReason; at: number }> = []
          const written = made.flatMap((m): Array<FinishedAttempt> => {
            if (m._tag === "Expired") return []
            if (m._tag === "Dropped")
              return [{ finished: { ...m.delivery, status: "failed", error: m.error }, next: null }]
            const before = health.get(m.delivery.webhookId)
            if (before === undefined)
              return [{ finished: finishedAttempt(m.delivery, m.result, null), next: null }]
            const outcome = outcomeOf(m.result)
            const after = afterAttempt(before, outcome, settings.disableAfterMs, settings.isolation)
            health.set(after.id, after)
            changed.add(after.id)
            const reason = disabledBy(before.status, after, outcome)
            if (reason !== null) disabled.push({ endpoint: after, reason, at: outcome.at })
            // A disabled (or deleted) endpoint gets no retry.
            const next = after.status === "active" ? retryOf(m) : null
            return [{ finished: finishedAttempt(m.delivery, m.result, next?.dueAt ?? null), next }]
          })
          const expired = made.flatMap((m) => (m._tag === "Expired" ? [m.delivery.id] : []))
          if (written.length > 0) {
            const complete = repository.completeMany(
              written,
              claimToken,
              [...changed].map((id) => health.get(id)!)
            )
            // Usually the unit's last statement, so it carries the commit: one round trip less.
            const last = expired.length === 0 && disabled.length === 0
            const lost = yield* last ? uow.commitWith(complete) : complete
            // Nothing of the batch was written: it is written again without them.
            if (lost.length > 0) return yield* new LostClaims({ ids: lost })
          }
          if (expired.length > 0) yield* repository.release(expired, claimToken)
          const notices = yield* Effect.forEach(disabled, (d) =>
            queueDisabledNotice(d.endpoint, d.reason, d.at)
          )
          return { finished: written.map((w) => w.finished), notices }
        })
      )

    const record = (made: ReadonlyArray<AttemptMade>, claimToken: string) =>
      Effect.gen(function* () {
        // Attempts another dispatcher took over: what this one sent stays unlogged.
        const unlogged = new Map<string, Delivery>()
        let remaining = made
        for (;;) {
          const outcome = yield* retriedOnStorage(writeBatch(remaining, claimToken)).pipe(
            Effect.map(Either.right),
            Effect.catchTag("LostClaims", (lost) => Effect.succeed(Either.left(lost.ids)))
          )
          if (Either.isRight(outcome)) {
            yield* Effect.forEach(outcome.right.notices, logDisabled, { discard: true })
            const byId = new Map(outcome.right.finished.map((d) => [d.id, d]))
            // An expired attempt stays as it was: pending, given back.
            const finished = made.map(
              (m) => byId.get(m.delivery.id) ?? unlogged.get(m.delivery.id) ?? m.delivery
            )
            const expired = made.filter((m) => m._tag === "Expired").length
            if (expired > 0)
              yield* Effect.logWarning({
                message: "attempts given back unsent: their send window ended before they could start",
                attempts: expired
              })
            const events = new Map(
              made.map((m) => [m.delivery.id, m._tag === "Expired" ? null : (m.event ?? null)])
            )
            yield* Effect.forEach(outcome.right.finished, (d) => logAttempt(d, events.get(d.id) ?? null), {
              discard: true
            })
            return finished
          }
          const lost = new Set(outcome.left)
          for (const m of remaining)
            if (lost.has(m.delivery.id))
              unlogged.set(
                m.delivery.id,
                m._tag === "Sent"
                  ? finishedAttempt(m.delivery, m.result, null)
                  : m._tag === "Dropped"
                    ? { ...m.delivery, status: "failed", error: m.error }
                    : m.delivery
              )
          remaining = remaining.filter((m) => !lost.has(m.delivery.id))
        }
      }).pipe(
        // Still failing after the retries: the claims are given back, so the attempts are
        // due again at once rather than when their leases end.
        Effect.tapError(() =>
          Effect.ignore(
            retriedOnStorage(
              repository.release(
                made.map((m) => m.delivery.id),
                claimToken
              )
            )
          )
        )
      )

    const random = () => {
      const bytes = crypto.randomBytes(4)
      return ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0
    }

    /** One log line per attempt made or dropped: ids and outcome, never the secret or the payload. */
    const logAttempt = (delivery: Delivery, event: DomainEvent | null = null) =>
      Effect.logInfo({
        message: "delivery attempt",
        deliveryId: delivery.id,
        webhookId: delivery.webhookId,
        eventId: delivery.eventId,
        // The submission and the request that raised the event (docs/operations.md, Request
        // ids); left
        // undefined, the logger writes the id of the request this runs for (a test send's).
        submissionId: event?.submissionId ?? null,
        requestId: event?.requestId,
        eventType: delivery.eventType,
        attempt: delivery.attempt,
        trigger: delivery.trigger,
        status: delivery.status,
        responseStatus: delivery.responseStatus,
        durationMs: delivery.durationMs,
        ...(delivery.error === null ? {} : { error: delivery.error })
      })

    /**
     * Which step of the retry schedule a failed attempt is at: a recovery starts the schedule
     * again (docs/webhooks.md, Recovery), so its attempts count from the recover attempt.
     */
    const placeInSchedule = (delivery: Delivery) =>
      delivery.trigger === "recover"
        ? Effect.succeed(1)
        : delivery.trigger !== "retry"
          ? Effect.succeed(delivery.attempt)
          : Effect.map(repository.attemptsOf(delivery.webhookId, delivery.eventId), (attempts) => {
              const recovered = attempts.filter(
                (a) => a.trigger === "recover" && a.attempt < delivery.attempt
              )
              const start = Math.max(0, ...recovered.map((a) => a.attempt))
              return start === 0 ? delivery.attempt : delivery.attempt - start + 1
            })

    /** Sends a test or redelivery at once and logs it (no retries: the caller sees the result). */
    const sendNow = (endpoint: WebhookEndpoint, attempt: Delivery, payload: WebhookPayload) =>
      Effect.gen(function* () {
        const result = yield* send(endpoint, payload)
        const finished = finishedAttempt(attempt, result, null)
        const recorded = yield* uow.transaction(
          Effect.zipLeft(recordOutcome(endpoint.id, outcomeOf(result)), repository.insertFinished(finished))
        )
        yield* logDisabled(recorded.disabled)
        return finished
      }).pipe(Effect.tap((finished) => logAttempt(finished)))

    return Deliveries.of({
      list: (workspaceId, webhookId, query) =>
        Effect.gen(function* () {
          const endpoint = yield* findOwn(workspaceId, webhookId)
          const filter = {
            status: query.status ?? null,
            eventType: query.eventType ?? null,
            submissionId: query.submissionId ?? null,
            createdAfter: query.createdAfter ?? null,
            createdBefore: query.createdBefore ?? null
          }
          // The cursor is bound to the filters: one from another filtered list is refused.
          const list = `deliveries:${endpoint.id}:${JSON.stringify(Object.values(filter))}`
          const page = yield* pageRequest(crypto, list, query)
          return listed(crypto, list, yield* repository.list(endpoint.id, page, filter))
        }),

      get: (workspaceId, webhookId, deliveryId) =>
        Effect.gen(function* () {
          const endpoint = yield* findOwn(workspaceId, webhookId)
          return yield* Effect.flatMap(
            repository.findInWebhook(endpoint.id, deliveryId),
            Option.match({ onNone: () => Effect.fail(notFound("delivery")), onSome: Effect.succeed })
          )
        }),

      recover: (workspaceId, webhookId, window) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const until = window.until ?? now
          const endpoint = yield* findOwn(workspaceId, webhookId)
          const inverted = invertedRangeIssues(
            { name: "since", at: window.since },
            { name: "until", at: until }
          )
          if (inverted.length > 0) return yield* Effect.fail(invalid(inverted))
          const queued = yield* uow.transaction(
            Effect.gen(function* () {
              const locked = yield* Effect.flatMap(
                repository.lockEndpoint(endpoint.id),
                Option.match({ onNone: () => Effect.fail(notFound("webhook")), onSome: Effect.succeed })
              )
              if (locked.status !== "active")
                return yield* Effect.fail(
                  new Conflict({
                    message: `The webhook is ${locked.status}: set its status to active first, then recover.`
                  })
                )
              // Events from before the endpoint existed were never its to receive.
              const occurrences = { since: Math.max(window.since, locked.createdAt), until }
              let after: ListPosition | null = null
              let count = 0
              for (let batch = 0; ; batch++) {
                const found: ReadonlyArray<RecoverableEvent> = yield* repository.recoverableEvents(
                  locked,
                  occurrences,
                  after,
                  RECOVER_BATCH
                )
                if (found.length === 0) break
                // Ids sorted and each batch due 1 ms after the one before: the queue's order
                // (due time, then id) is the order of occurrence, so the oldest leaves first.
                const attemptIds = (yield* Effect.forEach(found, () => ids.next("dlv"))).sort()
                const attempts = found.map(({ event, attemptsMade }, index) =>
                  pendingAttempt({
                    id: attemptIds[index]!,
                    webhookId: locked.id,
                    eventId: event.id,
                    eventType: event.type,
                    attempt: attemptsMade + 1,
                    trigger: "recover",
                    createdAt: now
                  })
                )
                yield* repository.enqueue(attempts, now + batch)
                count += attempts.length
                if (found.length < RECOVER_BATCH) break
                const last: DomainEvent = found[found.length - 1]!.event
                after = { createdAt: last.createdAt, id: last.id }
              }
              return count
            })
          )
          if (queued > 0)
            yield* Effect.serviceOption(DeliveryWakeups).pipe(
              Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (wakeups) => wakeups.notify }))
            )
          yield* Effect.logInfo({
            message: "webhook recovery",
            webhookId: endpoint.id,
            queued,
            since: window.since,
            until
          })
          return { queued, since: window.since, until }
        }),

      test: (workspaceId, webhookId) =>
        Effect.gen(function* () {
          const endpoint = yield* findOwn(workspaceId, webhookId)
          const now = yield* Clock.currentTimeMillis
          const attempt = pendingAttempt({
            id: yield* ids.next("dlv"),
            webhookId: endpoint.id,
            eventId: yield* ids.next("evt"),
            eventType: TEST_EVENT_TYPE,
            attempt: 1,
            trigger: "test",
            createdAt: now
          })
          return yield* sendNow(endpoint, attempt, testPayload(attempt.eventId, endpoint.id, now))
        }),

      redeliver: (workspaceId, webhookId, deliveryId) =>
        Effect.gen(function* () {
          const endpoint = yield* findOwn(workspaceId, webhookId)
          const original = yield* Effect.flatMap(
            repository.findInWebhook(endpoint.id, deliveryId),
            Option.match({ onNone: () => Effect.fail(notFound("delivery")), onSome: Effect.succeed })
          )
          const payload = yield* payloadOf(original).pipe(
            Effect.catchTag("SourceGone", (source) =>
              Effect.fail(
                new Conflict({
                  message: `The ${source.what} this delivery was built from no longer exists; it cannot be redelivered.`
                })
              )
            )
          )
          const earlier = yield* repository.attemptsOf(endpoint.id, original.eventId)
          const attempt = pendingAttempt({
            id: yield* ids.next("dlv"),
            webhookId: endpoint.id,
            eventId: original.eventId,
            eventType: original.eventType,
            attempt: Math.max(0, ...earlier.map((delivery) => delivery.attempt)) + 1,
            trigger: "redeliver",
            createdAt: yield* Clock.currentTimeMillis
          })
          // The same event: its answer names the request that raised it, as the log's reads do.
          return yield* sendNow(
            endpoint,
            original.requestId === undefined ? attempt : { ...attempt, requestId: original.requestId },
            payload
          )
        }),

      claimDue: (limit, claimToken) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          repository.claimDue(now, limit, settings.leaseMs, claimToken, settings.isolation)
        ),

      claim: (limit, claimToken) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          repository.claim(now, limit, settings.leaseMs, claimToken, settings.isolation)
        ),

      release: (deliveryIds, claimToken) =>
        deliveryIds.length === 0 ? Effect.void : repository.release(deliveryIds, claimToken),

      nextDueAt: Effect.flatMap(Clock.currentTimeMillis, (now) =>
        repository.nextDueAt(now, settings.isolation)
      ),

      dispatch: (delivery, claimToken) =>
        prepare([delivery]).pipe(
          Effect.flatMap((prepared) => attempt(prepared[0]!)),
          // Reading what to send failed: the claim is given back, due again at once.
          Effect.tapError(() =>
            Effect.ignore(retriedOnStorage(repository.release([delivery.id], claimToken)))
          ),
          Effect.flatMap((made) => record([made], claimToken)),
          Effect.map((finished) => finished[0]!)
        ),

      prepare,
      attempt,
      record
    })
  })
)
