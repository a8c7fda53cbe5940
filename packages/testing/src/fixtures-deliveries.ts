/** Test data and layers for the delivery engine's rules. */
import {
  AddressResolver,
  BuiltInSummarizerLive,
  DeliveriesLive,
  type Delivery,
  DeliverySettings,
  type DeliverySettingsValues,
  IntakeBotsLive,
  makeDeliveryId,
  makeWebhookId,
  ReceiverClient,
  type ReceiverRequest,
  type ReceiverResponse,
  ReceiverUnreachable,
  SubmissionsLive,
  type Summarizer,
  SummaryJobsLive,
  WebhookSettings,
  WebhooksLive
} from "@intake/domain"
import {
  MemoryDatabase,
  MemoryIdempotencyStore,
  MemorySubmissionPortsLive,
  MemoryUnitOfWork,
  MemoryWebhookRepository,
  MemoryWorkspaceRepository
} from "@intake/memory/internal"
import { PlatformLive } from "@intake/node"
import { Effect, Layer } from "effect"
import { uniqueId } from "./records.js"

/** A DNS double over a table the test may change while it runs (DNS rebinding). */
const LiveTableResolver = (table: Record<string, ReadonlyArray<string>>) =>
  Layer.succeed(AddressResolver, { resolve: (host) => Effect.sync(() => table[host.toLowerCase()] ?? []) })

export const aDelivery = (overrides: Partial<Delivery> = {}): Delivery => ({
  id: makeDeliveryId(uniqueId("dlv")),
  webhookId: makeWebhookId(uniqueId("wh")),
  eventId: uniqueId("evt"),
  eventType: "submission.completed",
  attempt: 1,
  trigger: "event",
  status: "pending",
  responseStatus: null,
  responseBody: null,
  error: null,
  durationMs: null,
  nextRetryAt: null,
  sentAt: null,
  createdAt: 0,
  ...overrides
})

export type ReceiverAnswer = ReceiverResponse | ReceiverUnreachable

export const answer = (status: number, body = "", retryAfter: string | null = null): ReceiverResponse => ({
  status,
  body,
  retryAfter
})

export const unreachable = (message = "could not reach the receiver (ECONNREFUSED)") =>
  new ReceiverUnreachable({ message })

/**
 * A receiver double: records every request and answers from a script (one answer per
 * request, the last one repeating; 200 when the script is empty).
 */
export const receiverDouble = () => {
  const sent: Array<ReceiverRequest> = []
  let script: Array<ReceiverAnswer> = []
  const layer = Layer.succeed(
    ReceiverClient,
    ReceiverClient.of({
      send: (request) =>
        Effect.suspend(() => {
          sent.push(request)
          const next = script.length > 1 ? script.shift()! : (script[0] ?? answer(200))
          return next instanceof ReceiverUnreachable ? Effect.fail(next) : Effect.succeed(next)
        })
    })
  )
  return {
    sent,
    layer,
    /** The answers of the next requests, in order; the last one repeats. */
    answerWith: (...answers: ReadonlyArray<ReceiverAnswer>) => {
      script = [...answers]
    },
    /** The parsed JSON bodies sent so far. */
    payloads: () => sent.map((request) => JSON.parse(request.body) as Record<string, unknown>)
  }
}

export interface DeliveryRulesOptions {
  readonly settings?: Partial<DeliverySettingsValues>
  readonly allowPrivateNetworks?: boolean
  /** What the DNS double answers; read at each lookup, so a test may re-point a name. */
  readonly addresses?: Record<string, ReadonlyArray<string>>
  /** In place of the built-in summarizer (a model double), with the summary job's use cases. */
  readonly summarizer?: Layer.Layer<Summarizer>
}

/**
 * Submissions, intake bots, webhooks and deliveries over one fresh memory database, with
 * the receiver double given (and the database, to look at what was written).
 */
export const deliveryRulesLayer = (
  receiver: Layer.Layer<ReceiverClient>,
  options: DeliveryRulesOptions = {}
) => {
  const ports = Layer.mergeAll(
    MemorySubmissionPortsLive,
    MemoryWorkspaceRepository,
    MemoryWebhookRepository,
    MemoryIdempotencyStore,
    MemoryUnitOfWork,
    options.summarizer ?? BuiltInSummarizerLive
  ).pipe(Layer.provideMerge(PlatformLive), Layer.provideMerge(MemoryDatabase.Default))
  const settings = Layer.mergeAll(
    receiver,
    LiveTableResolver(options.addresses ?? {}),
    WebhookSettings.layer({ allowPrivateNetworks: options.allowPrivateNetworks ?? false }),
    DeliverySettings.layer(options.settings ?? {})
  )
  return Layer.mergeAll(SubmissionsLive, IntakeBotsLive, WebhooksLive, DeliveriesLive, SummaryJobsLive).pipe(
    Layer.provideMerge(Layer.merge(ports, settings))
  )
}
