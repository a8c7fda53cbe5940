/**
 * "@intake/memory/internal": each in-memory adapter on its own, for the contract suites and
 * the tests that compose them one by one; outside semantic versioning (docs/embedding.md).
 */
export * from "./access-invalidation.js"
export * from "./access-ports.js"
export * from "./api-key-repository.js"
export * from "./contacts.js"
export * from "./database.js"
export * from "./deliveries.js"
export * from "./event-outbox.js"
export * from "./index.js"
export * from "./intake-bots.js"
export * from "./rate-limiter.js"
export * from "./submission-ports.js"
export * from "./submissions.js"
export * from "./summary-jobs.js"
export * from "./unit-of-work.js"
export * from "./usage-counters.js"
export * from "./webhooks.js"
export * from "./workspace-repository.js"
