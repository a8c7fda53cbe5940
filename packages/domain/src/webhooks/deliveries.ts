/**
 * The delivery engine's use cases (docs/rules.md, Webhooks and deliveries): queue an event's attempts in
 * the unit of work that records the event; dispatch a claimed attempt (rebuild the
 * payload from its sources, sign it with Standard Webhooks, check the receiver's address,
 * send, log the attempt, update the endpoint's state, schedule the retry or give up);
 * send a test event or redeliver one at once; list an endpoint's attempts.
 */
import { Clock, Data, Duration, Effect, Either, Layer, Option, Schedule } from "effect"
import { deliveriesWithheld } from "../access/plans.js"
import { WorkspaceRepository } from "../access/ports.js"
import { Conflict, invalid, notFound, type StorageUnavailable } from "../shared/errors.js"
import type { WebhookId, WorkspaceId } from "../shared/ids.js"
import { invertedRangeIssues } from "../shared/list-query.js"
import { listed, pageRequest } from "../shared/lists.js"
import type { Delivery, WebhookDisabledReason, WebhookEndpoint } from "../shared/models.js"
import { Crypto, Ids, UnitOfWork } from "../shared/ports.js"
import { EventOutbox } from "../submissions/ports.js"
import { pendingAttempt, pendingAttemptsFor } from "./attempts.js"
import { sendSpacingMs } from "./delivery-isolation.js"
import { DeliverySettings, retriedOnStorage, sendWindowMs } from "./delivery-settings.js"
import { afterAttempt, disabledBy } from "./endpoint-health.js"
import { TEST_EVENT_TYPE, testPayload, type WebhookPayload, webhookDisabledEvent } from "./event-payloads.js"
import { makePayloads } from "./payloads.js"
import {
  type AttemptOutcome,
  DeliveryRepository,
  DeliveryWakeups,
  type DispatchSources,
  type FinishedAttempt,
  WebhookRepository
} from "./ports.js"
import { queueRecoveredAttempts } from "./recovery.js"
import { retryAfterMillis, retryDelay } from "./retry-schedule.js"
import { finishedAttempt, logAttempt, logDisabled, makeSender, outcomeOf } from "./sending.js"
import { type AttemptMade, Deliveries, type PreparedAttempt } from "./services.js"

/** Claims that ran out while their attempts were under way: another dispatcher owns them now. */
class LostClaims extends Data.TaggedError("LostClaims")<{ readonly ids: ReadonlyArray<string> }> {}

export const DeliveriesLive = Layer.effect(
  Deliveries,
  Effect.gen(function* () {
    const repository = yield* DeliveryRepository
    const webhooks = yield* WebhookRepository
    const workspaces = yield* WorkspaceRepository
    const outbox = yield* EventOutbox
    const crypto = yield* Crypto
    const ids = yield* Ids
    const uow = yield* UnitOfWork
    const settings = yield* DeliverySettings

    const { payloadOf, payloadFromSources } = yield* makePayloads
    const send = yield* makeSender

    const findOwn = (workspaceId: WorkspaceId, webhookId: WebhookId) =>
      Effect.flatMap(
        webhooks.findInWorkspace(workspaceId, webhookId),
        Option.match({ onNone: () => Effect.fail(notFound("webhook")), onSome: Effect.succeed })
      )

    /**
     * Applies an attempt's outcome to its endpoint, inside the caller's unit of work. When
     * this outcome disabled the endpoint, a webhook.disabled event is queued in the same
     * unit of work for the workspace's other active endpoints that subscribe to it.
     */
    const recordOutcome = (webhookId: WebhookId, outcome: AttemptOutcome) =>
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
          const changed = new Set<WebhookId>()
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
            queueRecoveredAttempts(repository, ids, endpoint.id, window.since, until, now)
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
