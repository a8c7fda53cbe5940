// The drain bench's receiver (bench/delivery-drain.ts), in a process of its own so that its
// CPU is not the dispatcher's: answers 204 at once on 127.0.0.1, counts the deliveries and the
// (endpoint, webhook-id) pairs that arrived more than once, and tells the parent over IPC.
import { createServer } from "node:http"

let received = 0
let duplicates = 0
const seen = new Set()
const server = createServer((request, response) => {
  request.resume()
  request.on("end", () => {
    received++
    const key = `${request.url} ${request.headers["webhook-id"]}`
    if (seen.has(key)) duplicates++
    else seen.add(key)
    response.writeHead(204).end()
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => process.send({ type: "listening", port: server.address().port }))
process.on("message", (message) => {
  if (message.type === "read") process.send({ type: "received", received, duplicates })
})
process.on("disconnect", () => process.exit(0))
