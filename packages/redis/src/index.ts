export * from "./access-invalidation.js"
export * from "./connection.js"
export * from "./live.js"
export * from "./rate-limiter.js"
