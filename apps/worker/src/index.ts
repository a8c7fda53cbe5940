export * from "./config.js"
export * from "./dispatcher.js"
export * from "./logging.js"
export * from "./receiver-client.js"
