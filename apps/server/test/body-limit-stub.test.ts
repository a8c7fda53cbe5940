import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, testServer } from "./harness.js"
import { rawPost, submissionBodyOfSize } from "./raw-http.js"
import { STUB_KEY, StubServices } from "./stubs.js"

const LIMIT = 1_048_576
const path = "/v1/intake-bots/bot_x/submissions"

layer(testServer(StubServices), { excludeTestServices: true })("body limit (stub)", (it) => {
  for (const chunked of [false, true]) {
    it.effect(`${chunked ? "chunked" : "declared"}: exactly 1 MB passes, one byte more is 400`, () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const fits = yield* rawPost(baseUrl, path, submissionBodyOfSize(LIMIT), { key: STUB_KEY, chunked })
        expect(fits.status).toBe(201)
        const over = yield* rawPost(baseUrl, path, submissionBodyOfSize(LIMIT + 1), {
          key: STUB_KEY,
          chunked
        })
        expect(over.status).toBe(400)
        const big = yield* rawPost(baseUrl, path, submissionBodyOfSize(5 * LIMIT), { key: STUB_KEY, chunked })
        expect(big.status).toBe(400)
        expect(big.body).toMatchObject({ success: false, error: { code: "validation_failed" } })
      })
    )
  }
})
