/**
 * The embedding API of @intake/domain (docs/embedding.md): the models, the errors a host
 * handles, the ports an adapter implements, the use cases over them, and the policies a
 * host configures or reads (plans, scopes, retry schedule, isolation, event payloads).
 * Semantic versioning covers this entry point. The wire shapes and the hot-path helpers the
 * adapters and the HTTP server share are under "@intake/domain/internal", outside it.
 */

export * from "./access/access.js"
export * from "./access/idempotency.js"
export * from "./access/plans.js"
export * from "./access/ports.js"
export * from "./access/provisioning.js"
export * from "./access/scopes.js"
export * from "./access/services.js"
export * from "./access/sliding-window.js"
export * from "./shared/errors.js"
export * from "./shared/ids.js"
export * as Paging from "./shared/list-query.js"
export type { Listed, ListQuery } from "./shared/lists.js"
export * from "./shared/models.js"
export * from "./shared/ports.js"
// Named by the types of the ports adapters implement (a declaration build must reach it).
export type * from "./shared/stored.js"
export * as TraceContext from "./shared/trace-context.js"
export * from "./submissions/intake-bot-cache.js"
export * from "./submissions/intake-bots.js"
export * from "./submissions/ports.js"
export * from "./submissions/services.js"
export * from "./submissions/submissions.js"
export * from "./summaries/built-in-summarizer.js"
export * from "./summaries/ports.js"
export * from "./summaries/services.js"
export * as Summary from "./summaries/summary.js"
export * from "./summaries/summary-jobs.js"
export * from "./summaries/summary-settings.js"
export * from "./use-cases.js"
export {
  pendingAttemptsFor,
  queueDeliveries,
  RECOVER_BATCH,
  skippedAttemptsFor
} from "./webhooks/attempts.js"
export * from "./webhooks/deliveries.js"
export * as DeliveryIsolation from "./webhooks/delivery-isolation.js"
export * from "./webhooks/delivery-settings.js"
export * as EndpointHealth from "./webhooks/endpoint-health.js"
export * as EventPayloads from "./webhooks/event-payloads.js"
export * from "./webhooks/ports.js"
export * from "./webhooks/receiver-address.js"
export * from "./webhooks/retention.js"
export * as RetrySchedule from "./webhooks/retry-schedule.js"
export { RESPONSE_BODY_LIMIT, USER_AGENT } from "./webhooks/sending.js"
export * from "./webhooks/services.js"
export * as StandardWebhooks from "./webhooks/standard-webhooks.js"
export * as WebhookEvents from "./webhooks/webhook-events.js"
export * from "./webhooks/webhook-settings.js"
export * from "./webhooks/webhooks.js"
