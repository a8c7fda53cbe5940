export * from "./database.js"
export * from "./platform.js"
export * from "./unit-of-work.js"
export * from "./webhooks.js"
