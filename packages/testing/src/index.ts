export * from "./contracts/idempotency-store.js"
export * from "./contracts/webhook-repository.js"
export * from "./fixtures-webhooks.js"
export * from "./static-address-resolver.js"
