/**
 * "@intake/domain/internal": what the adapters, packages/api and the HTTP server share
 * beyond the embedding API: the wire shapes, the request-body and cursor helpers of the hot
 * path, and the validation policies the use cases apply. Outside semantic versioning
 * (docs/embedding.md, "Versioning"): any release may change it. It re-exports the public
 * entry point too, so one import serves an adapter.
 */

export * as ApiKeyFormat from "./access/api-key.js"
export * as ClientAddress from "./access/client-address.js"
export * from "./index.js"
export * as CanonicalJson from "./shared/canonical-json.js"
export * as Cursor from "./shared/cursor.js"
export * as DateTimes from "./shared/date-time.js"
export * as FieldValues from "./shared/field-values.js"
export * as JsonText from "./shared/json-text.js"
export * as Period from "./shared/period.js"
export * as WireShapes from "./shared/wire-shapes.js"
export * as BotSchema from "./submissions/bot-schema.js"
export * as ContactEvents from "./submissions/contact-events.js"
export * as ShareSlug from "./submissions/share-slug.js"
export * as ModelSummary from "./summaries/model-summary.js"
export * as WebhookSecret from "./webhooks/webhook-secret.js"
export * as WebhookUrl from "./webhooks/webhook-url.js"
