export * from "./logging.js"
export * from "./platform.js"
export * from "./receiver-client.js"
