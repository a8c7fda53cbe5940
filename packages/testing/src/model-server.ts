/**
 * A model server on 127.0.0.1 that speaks the OpenAI Responses API as `@effect/ai-openai`
 * calls it: `POST {base}/responses` with a JSON body, answered with the Response object
 * of fixtures/openai-response.json (OpenAI's documented shape) carrying the text the test
 * chooses. It records every request as it came, and can answer slowly, with an error
 * status, with garbage, or not at all.
 */
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

const RESPONSE = JSON.parse(readFileSync(new URL("./fixtures/openai-response.json", import.meta.url), "utf8"))

export type ModelBehaviour =
  | {
      readonly kind: "answer"
      readonly text: string | ((prompt: string) => string)
      readonly delayMs?: number
    }
  | {
      readonly kind: "status"
      readonly status: number
      readonly body?: unknown
      readonly headers?: Record<string, string>
    }
  | { readonly kind: "raw"; readonly body: string }
  /** Never answers (until the client gives up). */
  | { readonly kind: "hang" }

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  // biome-ignore lint/suspicious/noExplicitAny: the body is checked by assertions
  readonly body: any
}

/** The text of the user turn of a recorded request: what the model was shown of the submission. */
export const promptOf = (request: RecordedRequest): string =>
  (request.body.input as Array<{ role: string; content: unknown }>)
    .filter((item) => item.role === "user")
    .flatMap((item) => (Array.isArray(item.content) ? item.content : [{ text: item.content }]))
    .map((part: { text?: string }) => part.text ?? "")
    .join("\n")

/** OpenAI's answer with `text` as the output text. */
export const responseWith = (text: string) => ({
  ...RESPONSE,
  output: [{ ...RESPONSE.output[0], content: [{ ...RESPONSE.output[0].content[0], text }] }]
})

export const modelServer = (initial: ModelBehaviour) =>
  Effect.acquireRelease(
    Effect.async<{
      readonly url: string
      readonly requests: Array<RecordedRequest>
      /** Answers sent so far (a hanging request is not one). */
      readonly answered: () => number
      behave: (behaviour: ModelBehaviour) => void
      readonly close: () => void
    }>((resume) => {
      let behaviour = initial
      let answered = 0
      const requests: Array<RecordedRequest> = []
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let body: unknown = text
          try {
            body = JSON.parse(text)
          } catch {}
          const recorded = {
            method: request.method ?? "",
            path: request.url ?? "",
            headers: request.headers,
            body
          }
          requests.push(recorded)
          const current = behaviour
          const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
            answered++
            response
              .writeHead(status, { "content-type": "application/json", ...headers })
              .end(JSON.stringify(value))
          }
          switch (current.kind) {
            case "answer": {
              const answer =
                typeof current.text === "string" ? current.text : current.text(promptOf(recorded))
              setTimeout(() => json(200, responseWith(answer)), current.delayMs ?? 0)
              return
            }
            case "status":
              return json(
                current.status,
                current.body ?? { error: { message: "error", type: "server_error" } },
                current.headers
              )
            case "raw":
              answered++
              return response.writeHead(200, { "content-type": "application/json" }).end(current.body)
            case "hang":
              return
          }
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${port}/v1`,
            requests,
            answered: () => answered,
            behave: (next: ModelBehaviour) => {
              behaviour = next
            },
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          })
        )
      })
    }),
    (server) => Effect.sync(server.close)
  )
