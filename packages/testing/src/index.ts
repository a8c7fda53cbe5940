export * from "./contracts/api-key-repository.js"
export * from "./contracts/rate-limiter.js"
export * from "./contracts/workspace-repository.js"
export * from "./fixtures-access.js"
