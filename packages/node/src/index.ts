export * from "./fiber-roots.js"
export * from "./logging.js"
export * from "./platform.js"
export * from "./receiver-client.js"
