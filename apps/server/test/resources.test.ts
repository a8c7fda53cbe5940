import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { IntakeApi } from "@intake/api"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { admin, dataOf, expectError, expectHeaders, provision, realServer } from "./support.js"

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

layer(realServer(), { excludeTestServices: true })("intake bots and submissions", (it) => {
  it.effect("list and single shapes of bots and submissions", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const list = yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })
      expectHeaders(list)
      const { intake_bots, pagination } = dataOf(list)
      expect(pagination).toEqual({ has_more: false, next_cursor: null })
      expect(Object.keys(intake_bots[0]).sort()).toEqual(
        ["created_at", "id", "name", "status", "submission_count", "updated_at"].sort()
      )
      expect(intake_bots[0].created_at).toMatch(ISO_MS)

      const one = dataOf(yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}`, { key: tenant.key }))
      expect(Object.keys(one.intake_bot).sort()).toEqual(
        ["created_at", "description", "id", "name", "schema", "share_url", "status", "updated_at"].sort()
      )
      expect(one.intake_bot.share_url).toMatch(/^[A-Za-z0-9]{8}$/)
      expect(one.intake_bot.schema[0]).toEqual({ name: "name", label: "Name", type: "text", required: true })

      const created = yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
        key: tenant.key,
        body: { data: { name: "Ada", email: "ada@example.com", topic: "sales" }, is_test: true }
      })
      expectHeaders(created)
      const { submission } = dataOf(created, 201)
      expect(Object.keys(submission).sort()).toEqual(["created_at", "id", "status"])
      expect(submission.status).toBe("COMPLETED")

      const listed = dataOf(
        yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}/submissions`, { key: tenant.key })
      )
      expect(listed.schema).toEqual([
        { name: "name", label: "Name", type: "text" },
        { name: "email", label: "Email", type: "email" },
        { name: "topic", label: "Topic", type: "select" },
        { name: "message", label: "Message", type: "long_text" }
      ])
      // The data as it was sent, keys in their order (a page passes the stored text through).
      expect(listed.submissions[0].data).toEqual({ name: "Ada", email: "ada@example.com", topic: "sales" })
      expect(Object.keys(listed.submissions[0].data)).toEqual(["name", "email", "topic"])
      expect(Object.keys(listed.submissions[0]).sort()).toEqual(
        [
          "ai_summary",
          "created_at",
          "data",
          "file_count",
          "id",
          "is_test",
          "message_count",
          "schema_version",
          "status",
          "updated_at"
        ].sort()
      )
      const single = dataOf(
        yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}/submissions/${submission.id}`, {
          key: tenant.key
        })
      ).submission
      expect(single).toMatchObject({
        id: submission.id,
        intake_bot_id: tenant.botId,
        data: { name: "Ada", email: "ada@example.com", topic: "sales" },
        is_test: true,
        file_count: 0,
        messages: [],
        schema_version: 1
      })
      expect(single).not.toHaveProperty("message_count")
    })
  )

  it.effect("404 for another workspace's bot and submission, naming the outermost missing resource", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const mine = yield* provision(baseUrl)
      const theirs = yield* provision(baseUrl)
      const theirSubmission = dataOf(
        yield* call(baseUrl, "POST", `/v1/intake-bots/${theirs.botId}/submissions`, {
          key: theirs.key,
          body: { data: { name: "B", email: "b@example.com" } }
        }),
        201
      ).submission.id
      const cases: Array<[string, string, string, unknown?]> = [
        ["GET", `/v1/intake-bots/${theirs.botId}`, "intake_bot"],
        ["GET", `/v1/intake-bots/${theirs.botId}/submissions`, "intake_bot"],
        ["GET", `/v1/intake-bots/${theirs.botId}/submissions/${theirSubmission}`, "intake_bot"],
        ["GET", `/v1/intake-bots/${mine.botId}/submissions/${theirSubmission}`, "submission"],
        [
          "POST",
          `/v1/intake-bots/${theirs.botId}/submissions`,
          "intake_bot",
          { data: { name: "x", email: "x@example.com" } }
        ],
        ["GET", "/v1/intake-bots/bot_unknown", "intake_bot"]
      ]
      for (const [method, path, resource, body] of cases) {
        const answer = yield* call(baseUrl, method, path, { key: mine.key, ...(body ? { body } : {}) })
        expect(expectError(answer, 404, "resource_not_found"), path).toEqual({ resource })
        expectHeaders(answer)
      }
    })
  )

  it.effect("the operator interface stores messages with a submission and deletes it", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const stored = dataOf(
        yield* admin(baseUrl, "POST", `/admin/intake-bots/${tenant.botId}/submissions`, {
          data: { name: "Ada", email: "ada@example.com" },
          messages: [
            { role: "assistant", content: "Your name?" },
            { role: "user", content: "Ada" }
          ]
        }),
        201
      ).submission
      expect(stored.messages.map((m: { role: string }) => m.role)).toEqual(["assistant", "user"])
      const path = `/v1/intake-bots/${tenant.botId}/submissions/${stored.id}`
      const read = dataOf(yield* call(baseUrl, "GET", path, { key: tenant.key })).submission
      expect(read.messages.map((m: { content: string }) => m.content)).toEqual(["Your name?", "Ada"])
      const listed = dataOf(
        yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}/submissions`, { key: tenant.key })
      )
      expect(listed.submissions[0].message_count).toBe(2)
      expect(dataOf(yield* admin(baseUrl, "DELETE", `/admin/submissions/${stored.id}`))).toEqual({
        id: stored.id,
        deleted: true
      })
      const gone = yield* call(baseUrl, "GET", path, { key: tenant.key })
      expect(expectError(gone, 404, "resource_not_found")).toEqual({ resource: "submission" })
    })
  )

  it.effect("409 conflict for a bot that is not ACTIVE", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      dataOf(yield* admin(baseUrl, "PATCH", `/admin/intake-bots/${tenant.botId}`, { status: "PAUSED" }))
      const answer = yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
        key: tenant.key,
        body: { data: { name: "A", email: "a@example.com" } }
      })
      expectError(answer, 409, "conflict")
      expectHeaders(answer)
    })
  )

  it.effect(
    "Idempotency-Key: a replay returns the stored answer, another body is 409, a bad key is 400",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const path = `/v1/intake-bots/${tenant.botId}/submissions`
        const body = { data: { name: "A", email: "a@example.com" } }
        const headers = { "idempotency-key": "order-42" }
        const first = yield* call(baseUrl, "POST", path, { key: tenant.key, body, headers })
        const created = dataOf(first, 201)
        expect(first.headers.get("idempotent-replayed")).toBeNull()
        // Same body with its keys in another order: the same parsed body, so a replay.
        const again = yield* call(baseUrl, "POST", path, {
          key: tenant.key,
          body: { data: { email: "a@example.com", name: "A" } },
          headers
        })
        expect(again.status).toBe(201)
        expect(again.body).toEqual(first.body)
        expect(again.headers.get("idempotent-replayed")).toBe("true")
        expectHeaders(again)
        expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"))
        const list = dataOf(yield* call(baseUrl, "GET", path, { key: tenant.key }))
        expect(list.submissions.map((s: { id: string }) => s.id)).toEqual([created.submission.id])

        const conflict = yield* call(baseUrl, "POST", path, {
          key: tenant.key,
          body: { data: { name: "B", email: "b@example.com" } },
          headers
        })
        expectError(conflict, 409, "idempotency_conflict")
        expectHeaders(conflict)

        for (const bad of ["", "x".repeat(256), "naïve"]) {
          const answer = yield* call(baseUrl, "POST", path, {
            key: tenant.key,
            body,
            headers: { "idempotency-key": bad }
          })
          expectError(answer, 400, "validation_failed")
        }
        // The same Idempotency-Key under another API key is another scope.
        const secondKey = dataOf(
          yield* admin(baseUrl, "POST", `/admin/workspaces/${tenant.workspaceId}/api-keys`, {
            scopes: ["write:intake-bots"]
          }),
          201
        ).api_key.key
        const otherScope = yield* call(baseUrl, "POST", path, { key: secondKey, body, headers })
        expect(dataOf(otherScope, 201).submission.id).not.toBe(created.submission.id)
      })
  )

  it.effect("concurrent requests with one Idempotency-Key create one submission; the others replay it", () =>
    // The memory store serializes units of work, so a request never sees another one
    // in flight: it waits and then replays. (With Postgres, in flight answers 409.)
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const path = `/v1/intake-bots/${tenant.botId}/submissions`
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, () =>
          call(baseUrl, "POST", path, {
            key: tenant.key,
            body: { data: { name: "C", email: "c@example.com" } },
            headers: { "idempotency-key": "burst-1" }
          })
        ),
        { concurrency: "unbounded" }
      )
      const created = answers.filter((answer) => answer.status === 201)
      const conflicts = answers.filter((answer) => answer.status === 409)
      expect(created.length + conflicts.length).toBe(8)
      for (const answer of conflicts) expectError(answer, 409, "idempotency_conflict")
      const ids = new Set(created.map((answer) => dataOf(answer, 201).submission.id))
      expect(ids.size).toBe(1)
      expect(created.filter((answer) => answer.headers.get("idempotent-replayed") === null)).toHaveLength(1)
      const listed = dataOf(yield* call(baseUrl, "GET", path, { key: tenant.key }))
      expect(listed.submissions.map((s: { id: string }) => s.id)).toEqual([...ids])
    })
  )

  it.effect("429 plan_limit_exceeded once the monthly quota is used up", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      dataOf(
        yield* admin(baseUrl, "PATCH", `/admin/workspaces/${tenant.workspaceId}`, {
          monthly_submission_quota: 2
        })
      )
      const path = `/v1/intake-bots/${tenant.botId}/submissions`
      for (let i = 0; i < 2; i++) {
        dataOf(
          yield* call(baseUrl, "POST", path, {
            key: tenant.key,
            body: { data: { name: "A", email: "a@example.com" } }
          }),
          201
        )
      }
      const answer = yield* call(baseUrl, "POST", path, {
        key: tenant.key,
        body: { data: { name: "A", email: "a@example.com" } }
      })
      expect(expectError(answer, 429, "plan_limit_exceeded")).toEqual({
        resource: "submissions",
        current: 2,
        max: 2
      })
      expect(answer.headers.get("retry-after")).toBeNull()
      expectHeaders(answer)

      // With an Idempotency-Key the quota is checked last, after the stored answer
      // (docs/performance.md, Round trips of a create): the refusal still stores nothing of the
      // create, and the key replays the 429 even once the quota is raised.
      const keyed = {
        key: tenant.key,
        body: { data: { name: "B", email: "b@example.com" } },
        headers: { "idempotency-key": "past-quota" }
      }
      expectError(yield* call(baseUrl, "POST", path, keyed), 429, "plan_limit_exceeded")
      dataOf(
        yield* admin(baseUrl, "PATCH", `/admin/workspaces/${tenant.workspaceId}`, {
          monthly_submission_quota: 10
        })
      )
      const replayed = yield* call(baseUrl, "POST", path, keyed)
      expect(expectError(replayed, 429, "plan_limit_exceeded")).toEqual({
        resource: "submissions",
        current: 2,
        max: 2
      })
      expect(replayed.headers.get("idempotent-replayed")).toBe("true")
      const listed = dataOf(yield* call(baseUrl, "GET", path, { key: tenant.key }), 200) as {
        readonly submissions: ReadonlyArray<unknown>
      }
      expect(listed.submissions).toHaveLength(2)
    })
  )

  it.effect("walks 120 submissions in pages of 50: each once, newest first; date bounds are inclusive", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const created: Array<{ id: string; created_at: string }> = []
      for (let i = 0; i < 120; i++) {
        const answer = yield* admin(baseUrl, "POST", `/admin/intake-bots/${tenant.botId}/submissions`, {
          data: { name: `N${i}`, email: `n${i}@example.com` }
        })
        created.push(dataOf(answer, 201).submission)
      }
      const seen: Array<{ id: string; created_at: string }> = []
      let cursor: string | null = null
      let pages = 0
      do {
        const query: string = cursor === null ? "limit=50" : `limit=50&cursor=${encodeURIComponent(cursor)}`
        const page = dataOf(
          yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}/submissions?${query}`, {
            key: tenant.key
          })
        )
        seen.push(...page.submissions)
        cursor = page.pagination.next_cursor
        expect(page.pagination.has_more).toBe(cursor !== null)
        pages++
      } while (cursor !== null)
      expect(pages).toBe(3)
      expect(seen.map((s) => s.id)).toEqual(
        [...created]
          .sort((a, b) => b.created_at.localeCompare(a.created_at) || (a.id < b.id ? 1 : -1))
          .map((s) => s.id)
      )
      expect(new Set(seen.map((s) => s.id)).size).toBe(120)

      const middle = created[60]!.created_at
      const inRange = dataOf(
        yield* call(
          baseUrl,
          "GET",
          `/v1/intake-bots/${tenant.botId}/submissions?limit=100&created_after=${middle}&created_before=${middle}`,
          { key: tenant.key }
        )
      ).submissions as Array<{ id: string; created_at: string }>
      expect(inRange.length).toBeGreaterThan(0)
      expect(inRange.every((s) => s.created_at === middle)).toBe(true)
      expect(inRange.map((s) => s.id)).toContain(created[60]!.id)
    })
  )

  it.effect("a client derived from packages/api lists bots, reads one and creates a submission", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const client = yield* HttpApiClient.make(IntakeApi, {
        baseUrl,
        transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(tenant.key))
      })
      const listed = yield* client.intakeBots.listIntakeBots({ urlParams: { limit: 10 } })
      expect(listed.intake_bots.map((bot) => bot.id)).toEqual([tenant.botId])
      const one = yield* client.intakeBots.getIntakeBot({ path: { id: tenant.botId } })
      expect(one.intake_bot.name).toBe("Contact form")
      const created = yield* client.submissions.createSubmission({
        path: { id: tenant.botId },
        headers: { "idempotency-key": "client-1" },
        payload: { data: { name: "Grace", email: "grace@example.com" } }
      })
      expect(created.submission.status).toBe("COMPLETED")
      const read = yield* client.submissions.getSubmission({
        path: { id: tenant.botId, submissionId: created.submission.id }
      })
      expect(read.submission.data).toEqual({ name: "Grace", email: "grace@example.com" })
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )
})
