/**
 * "@intake/domain/internal": what the adapters, packages/api and the HTTP server share
 * beyond the embedding API: the wire shapes, the request-body and cursor helpers of the hot
 * path, and the validation policies the use cases apply. Outside semantic versioning
 * (docs/embedding.md, "Versioning"): any release may change it. It re-exports the public
 * entry point too, so one import serves an adapter.
 */
export * from "./index.js"
export * as ApiKeyFormat from "./policies/api-key.js"
export * as BotSchema from "./policies/bot-schema.js"
export * as CanonicalJson from "./policies/canonical-json.js"
export * as ClientAddress from "./policies/client-address.js"
export * as ContactEvents from "./policies/contact-events.js"
export * as Cursor from "./policies/cursor.js"
export * as DateTimes from "./policies/date-time.js"
export * as FieldValues from "./policies/field-values.js"
export * as JsonText from "./policies/json-text.js"
export * as ModelSummary from "./policies/model-summary.js"
export * as Period from "./policies/period.js"
export * as ShareSlug from "./policies/share-slug.js"
export * as WebhookSecret from "./policies/webhook-secret.js"
export * as WebhookUrl from "./policies/webhook-url.js"
export * as WireShapes from "./policies/wire-shapes.js"
