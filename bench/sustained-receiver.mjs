// The sustained bench's receiver (bench/delivery-sustained.ts), in a process of its own so that
// its CPU is neither the server's nor the load's: answers 204 at once on 127.0.0.1, notes when
// each delivery arrived and which submission it is about, counts the (endpoint, webhook-id)
// pairs that arrived more than once, and hands its notes to the parent over IPC.
import { createServer } from "node:http"

let received = 0
let duplicates = 0
const seen = new Set()
/** submission id -> arrival times (ms since the epoch), one per first delivery of each (endpoint, event). */
const arrivals = new Map()

const submissionOf = (payload) => payload?.data?.submission?.id ?? payload?.data?.submission_id

const server = createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    const at = Date.now()
    received++
    const key = `${request.url} ${request.headers["webhook-id"]}`
    if (seen.has(key)) duplicates++
    else {
      seen.add(key)
      const submission = submissionOf(JSON.parse(Buffer.concat(chunks).toString("utf8")))
      if (submission !== undefined) {
        const times = arrivals.get(submission)
        if (times === undefined) arrivals.set(submission, [at])
        else times.push(at)
      }
    }
    response.writeHead(204).end()
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => process.send({ type: "listening", port: server.address().port }))
process.on("message", (message) => {
  if (message.type === "read") process.send({ type: "received", received, duplicates })
  if (message.type === "arrivals") {
    process.send({ type: "arrivals", arrivals: [...arrivals] })
    arrivals.clear()
    seen.clear()
    received = 0
    duplicates = 0
  }
})
process.on("disconnect", () => process.exit(0))
