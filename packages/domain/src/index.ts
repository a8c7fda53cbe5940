/**
 * The embedding API of @intake/domain (docs/embedding.md): the models, the errors a host
 * handles, the ports an adapter implements, the use cases over them, and the policies a
 * host configures or reads (plans, scopes, retry schedule, isolation, event payloads).
 * Semantic versioning covers this entry point. The wire shapes and the hot-path helpers the
 * adapters and the HTTP server share are under "@intake/domain/internal", outside it.
 */
export * from "./errors.js"
export * from "./models.js"
export * as DeliveryIsolation from "./policies/delivery-isolation.js"
export * as EndpointHealth from "./policies/endpoint-health.js"
export * as EventPayloads from "./policies/event-payloads.js"
export * as Paging from "./policies/list-query.js"
export * from "./policies/plans.js"
export * as RetrySchedule from "./policies/retry-schedule.js"
export * from "./policies/scopes.js"
export * from "./policies/sliding-window.js"
export * as StandardWebhooks from "./policies/standard-webhooks.js"
export * as Summary from "./policies/summary.js"
export * as TraceContext from "./policies/trace-context.js"
export * as WebhookEvents from "./policies/webhook-events.js"
export * from "./ports.js"
export * from "./usecases/access.js"
export * from "./usecases/all.js"
export * from "./usecases/built-in-summarizer.js"
export * from "./usecases/deliveries.js"
export * from "./usecases/delivery-settings.js"
export * from "./usecases/idempotency.js"
export * from "./usecases/intake-bot-cache.js"
export * from "./usecases/intake-bots.js"
export * from "./usecases/provisioning.js"
export * from "./usecases/receiver-address.js"
export * from "./usecases/retention.js"
export * from "./usecases/services.js"
export * from "./usecases/submissions.js"
export * from "./usecases/summaries.js"
export * from "./usecases/summary-settings.js"
export * from "./usecases/webhook-settings.js"
export * from "./usecases/webhooks.js"
