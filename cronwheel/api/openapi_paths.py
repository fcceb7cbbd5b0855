"""The paths of the OpenAPI document (``GET /v1/openapi.json``): every route, its parameters,
its request and response bodies by reference to the components (``api/openapi.py`` builds the
document; ``make openapi`` writes it to ``api/openapi.json``).

Why one module: it is one table, a route per entry in the order of ``api/app.py``'s route table;
cut into pieces it would be read in as many places.
"""

from __future__ import annotations

from typing import Any

OPENAPI_VERSION = "3.1.0"
INFO: dict[str, Any] = {
    "title": "cronwheel",
    "version": "1.0.0",
    "description": "A distributed job scheduler: recurring (cron) and one-off jobs, at-least-once execution with leases, heartbeats and fencing tokens (`leaseEpoch`). Timestamps are RFC 3339 UTC with milliseconds. Errors are `application/problem+json`; every operation may also answer 500 with a problem that carries an `errorId`. Every operation but `GET /healthz` needs `Authorization: Bearer <token>` over TCP (the local Unix socket is admin by file permission); a tenant token sees only its tenant's jobs, executions and dead letters (another tenant's ids answer 404), a worker token may only heartbeat, complete and record effects, and the tenant and token routes are for admins (docs/security.md).\n\nConventions. Every path answers `OPTIONS` with 204 and an `Allow` header listing exactly its methods (and OPTIONS); any other method gets 405 with the same `Allow`. In request bodies an optional member sent as `null` is the same as leaving it out, wherever its type lists `null` (tenant quotas: `null` means unlimited; a job patch: `null` removes the member); elsewhere `null` is refused (422). The schemas state every rule JSON Schema can express; the few it cannot are written in the descriptions (two members compared, sizes in bytes, what depends on earlier requests). The input boundary, for every request: each string (body, path, query, header) is valid Unicode without NUL, and each JSON number is finite and fits in 64 bits, free-form payloads included (400/422 otherwise; docs/security.md has the table of limits). String formats of this API: `schedule` (what `cronwheel next` parses: cron with 5 or 6 fields and `H`, `@every`, macros, or a one-off instant/`+DURATION`, firing at least once after now), `instant` (an RFC 3339 date-time with a UTC offset), `instant-or-delay` (an `instant` or `+DURATION` from now, e.g. `+90s`, `+1h30m`), `time-zone` (an IANA zone name the server's tz database knows), `printable` (letters, marks, numbers, punctuation, symbols and spaces; not blank), `host-pattern` (a host name, `*.domain` or an IP address), `http-url` (an absolute http(s) URL with a host and a valid port), `calendar-time` (a calendar window's bound: `YYYY-MM-DDTHH:MM[:SS]`, local, or with a UTC offset).",
    "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
}
SERVERS: list[dict[str, Any]] = [{"url": "http://127.0.0.1:7878"}]
SECURITY: list[dict[str, Any]] = [{"bearerAuth": []}]

PATHS: dict[str, Any] = {
    "/v1/jobs": {
                    "post": {
                                "operationId": "createJob",
                                "summary": "Register a recurring or one-off job",
                                "description": "Acknowledged (201) only once the job is durably committed. With an `Idempotency-Key`, a retry with the same key and body returns the original response (with `Idempotent-Replayed: true`); the same key with another body is refused (422 `idempotency_key_reused`). A `runAs` this daemon cannot honour (it does not run as root, or the user or group does not exist here) is refused with 422 `run_as_refused`.",
                                "parameters": [
                                                  {
                                                      "name": "Idempotency-Key",
                                                      "in": "header",
                                                      "schema": {
                                                                    "type": "string",
                                                                    "minLength": 1,
                                                                    "maxLength": 200,
                                                                    "pattern": "^[\\u0020-\\u007e]*$",
                                                                },
                                                      "description": "1 to 200 printable ASCII characters.",
                                                  },
                                              ],
                                "requestBody": {
                                                   "required": True,
                                                   "content": {
                                                                  "application/json": {
                                                                                          "schema": {
                                                                                                        "$ref": "#/components/schemas/JobRequest",
                                                                                                    },
                                                                                      },
                                                              },
                                               },
                                "responses": {
                                                 "201": {
                                                            "description": "Created (or replayed).",
                                                            "content": {
                                                                           "application/json": {
                                                                                                   "schema": {
                                                                                                                 "$ref": "#/components/schemas/JobCreated",
                                                                                                             },
                                                                                               },
                                                                       },
                                                            "headers": {
                                                                           "Location": {
                                                                                           "schema": {
                                                                                                         "type": "string",
                                                                                                     },
                                                                                       },
                                                                           "Idempotent-Replayed": {
                                                                                                      "schema": {
                                                                                                                    "type": "string",
                                                                                                                    "const": "true",
                                                                                                                },
                                                                                                      "description": "Present on a replay.",
                                                                                                  },
                                                                       },
                                                            "links": {
                                                                         "GetJob": {
                                                                                       "operationId": "getJob",
                                                                                       "parameters": {
                                                                                                         "jobId": "$response.body#/jobId",
                                                                                                     },
                                                                                   },
                                                                         "CancelJob": {
                                                                                          "operationId": "cancelJob",
                                                                                          "parameters": {
                                                                                                            "jobId": "$response.body#/jobId",
                                                                                                        },
                                                                                      },
                                                                         "PauseJob": {
                                                                                         "operationId": "pauseJob",
                                                                                         "parameters": {
                                                                                                           "jobId": "$response.body#/jobId",
                                                                                                       },
                                                                                     },
                                                                         "ResumeJob": {
                                                                                          "operationId": "resumeJob",
                                                                                          "parameters": {
                                                                                                            "jobId": "$response.body#/jobId",
                                                                                                        },
                                                                                      },
                                                                         "TriggerJob": {
                                                                                           "operationId": "triggerJob",
                                                                                           "parameters": {
                                                                                                             "jobId": "$response.body#/jobId",
                                                                                                         },
                                                                                       },
                                                                         "ListExecutions": {
                                                                                               "operationId": "listExecutions",
                                                                                               "parameters": {
                                                                                                                 "jobId": "$response.body#/jobId",
                                                                                                             },
                                                                                           },
                                                                         "UpdateJob": {
                                                                                          "operationId": "updateJob",
                                                                                          "parameters": {
                                                                                                            "jobId": "$response.body#/jobId",
                                                                                                        },
                                                                                      },
                                                                     },
                                                        },
                                                 "400": {
                                                            "$ref": "#/components/responses/BadRequest",
                                                        },
                                                 "413": {
                                                            "$ref": "#/components/responses/PayloadTooLarge",
                                                        },
                                                 "415": {
                                                            "$ref": "#/components/responses/UnsupportedMediaType",
                                                        },
                                                 "422": {
                                                            "$ref": "#/components/responses/Unprocessable",
                                                        },
                                                 "503": {
                                                            "$ref": "#/components/responses/Unavailable",
                                                        },
                                                 "401": {
                                                            "$ref": "#/components/responses/Unauthorized",
                                                        },
                                                 "403": {"$ref": "#/components/responses/Forbidden"},
                                                 "429": {
                                                            "$ref": "#/components/responses/TooManyRequests",
                                                        },
                                                 "409": {"$ref": "#/components/responses/NameTaken"},
                                             },
                            },
                    "get": {
                               "operationId": "listJobs",
                               "summary": "List jobs, ordered by id",
                               "parameters": [
                                                 {
                                                     "name": "status",
                                                     "in": "query",
                                                     "schema": {
                                                                   "type": "string",
                                                                   "pattern": "^([aA][cC][tT][iI][vV][eE]|[pP][aA][uU][sS][eE][dD]|[cC][aA][nN][cC][eE][lL][lL][eE][dD]|[sS][uU][cC][cC][eE][eE][dD][eE][dD]|[fF][aA][iI][lL][eE][dD])?$",
                                                                   "examples": [
                                                                                   "active",
                                                                                   "paused",
                                                                                   "cancelled",
                                                                                   "succeeded",
                                                                                   "failed",
                                                                                   "ACTIVE",
                                                                                   "PAUSED",
                                                                                   "CANCELLED",
                                                                                   "SUCCEEDED",
                                                                                   "FAILED",
                                                                               ],
                                                               },
                                                     "description": "active, paused, cancelled, succeeded or failed, in any case; empty: every status.",
                                                 },
                                                 {
                                                     "name": "tenant",
                                                     "in": "query",
                                                     "schema": {
                                                                   "type": "string",
                                                                   "pattern": "^([A-Za-z0-9][A-Za-z0-9_.\\-]{0,63})?$",
                                                               },
                                                     "description": "Only this tenant's jobs (admins; a tenant token sees its own tenant's only, and an empty list for another). Empty: no filter.",
                                                 },
                                                 {
                                                     "name": "limit",
                                                     "in": "query",
                                                     "schema": {
                                                                   "type": "integer",
                                                                   "minimum": 1,
                                                                   "maximum": 1000,
                                                                   "default": 100,
                                                               },
                                                 },
                                                 {
                                                     "name": "after",
                                                     "in": "query",
                                                     "schema": {"type": "string"},
                                                     "description": "`next` of the previous page.",
                                                 },
                                                 {
                                                     "name": "name",
                                                     "in": "query",
                                                     "schema": {
                                                                   "type": "string",
                                                                   "minLength": 1,
                                                                   "maxLength": 200,
                                                               },
                                                     "description": "Only jobs with this name: the tenant's live holder of the name first (admins: each tenant's), then cancelled jobs that had it, newest first. One page (`next` is null).",
                                                 },
                                             ],
                               "responses": {
                                                "200": {
                                                           "description": "A page of jobs.",
                                                           "content": {
                                                                          "application/json": {
                                                                                                  "schema": {
                                                                                                                "$ref": "#/components/schemas/JobPage",
                                                                                                            },
                                                                                              },
                                                                      },
                                                           "links": {
                                                                        "GetFirstJob": {
                                                                                           "operationId": "getJob",
                                                                                           "parameters": {
                                                                                                             "jobId": "$response.body#/jobs/0/jobId",
                                                                                                         },
                                                                                       },
                                                                    },
                                                       },
                                                "400": {"$ref": "#/components/responses/BadRequest"},
                                                "503": {
                                                           "$ref": "#/components/responses/Unavailable",
                                                       },
                                                "401": {
                                                           "$ref": "#/components/responses/Unauthorized",
                                                       },
                                                "403": {"$ref": "#/components/responses/Forbidden"},
                                            },
                           },
                },
    "/v1/jobs/batch": {
                          "post": {
                                      "operationId": "createJobs",
                                      "summary": "Register up to 1,000 jobs in one request and one commit",
                                      "description": "Each item is a `POST /v1/jobs` body plus an optional `idempotencyKey` (the header's role, per job). Validated all or nothing: the first invalid job refuses the whole batch (its `field` names it, e.g. `jobs[3].schedule`). The tenant's `submitRate` is charged for all the jobs at once (429 for the batch; a batch larger than `submitBurst` can never pass). Then the batch commits in one transaction, and the answer lists one result per job, in order, with the status a single `POST /v1/jobs` would have answered: 201 created, 200 an idempotent replay, 422 `idempotency_key_reused`, 429 `quota_exceeded` (over the tenant's `maxJobs`; the others are created), or 500 `internal_error` with an `errorId` for a job the store failed on alone (the others are created: one job never fails its neighbours). The request body is limited to 1 MiB like every other. A job with a `runAs` this daemon cannot honour refuses the whole batch (422 `run_as_refused`, `field` naming the job).",
                                      "requestBody": {
                                                         "required": True,
                                                         "content": {
                                                                        "application/json": {
                                                                                                "schema": {
                                                                                                              "$ref": "#/components/schemas/JobBatchRequest",
                                                                                                          },
                                                                                            },
                                                                    },
                                                     },
                                      "responses": {
                                                       "200": {
                                                                  "description": "One result per job, in order.",
                                                                  "content": {
                                                                                 "application/json": {
                                                                                                         "schema": {
                                                                                                                       "$ref": "#/components/schemas/JobBatchResponse",
                                                                                                                   },
                                                                                                     },
                                                                             },
                                                                  "links": {
                                                                               "GetFirstJob": {
                                                                                                  "operationId": "getJob",
                                                                                                  "parameters": {
                                                                                                                    "jobId": "$response.body#/results/0/jobId",
                                                                                                                },
                                                                                              },
                                                                               "TriggerFirstJob": {
                                                                                                      "operationId": "triggerJob",
                                                                                                      "parameters": {
                                                                                                                        "jobId": "$response.body#/results/0/jobId",
                                                                                                                    },
                                                                                                  },
                                                                           },
                                                              },
                                                       "400": {
                                                                  "$ref": "#/components/responses/BadRequest",
                                                              },
                                                       "413": {
                                                                  "$ref": "#/components/responses/PayloadTooLarge",
                                                              },
                                                       "415": {
                                                                  "$ref": "#/components/responses/UnsupportedMediaType",
                                                              },
                                                       "422": {
                                                                  "$ref": "#/components/responses/Unprocessable",
                                                              },
                                                       "503": {
                                                                  "$ref": "#/components/responses/Unavailable",
                                                              },
                                                       "401": {
                                                                  "$ref": "#/components/responses/Unauthorized",
                                                              },
                                                       "403": {
                                                                  "$ref": "#/components/responses/Forbidden",
                                                              },
                                                       "429": {
                                                                  "$ref": "#/components/responses/TooManyRequests",
                                                              },
                                                   },
                                  },
                      },
    "/v1/jobs/{jobId}": {
                            "parameters": [
                                              {
                                                  "name": "jobId",
                                                  "in": "path",
                                                  "required": True,
                                                  "schema": {"type": "string"},
                                                  "description": "A job id (`j…`).",
                                              },
                                          ],
                            "get": {
                                       "operationId": "getJob",
                                       "summary": "A job",
                                       "responses": {
                                                        "200": {
                                                                   "description": "The job.",
                                                                   "content": {
                                                                                  "application/json": {
                                                                                                          "schema": {
                                                                                                                        "$ref": "#/components/schemas/Job",
                                                                                                                    },
                                                                                                      },
                                                                              },
                                                               },
                                                        "404": {
                                                                   "$ref": "#/components/responses/NotFound",
                                                               },
                                                        "503": {
                                                                   "$ref": "#/components/responses/Unavailable",
                                                               },
                                                        "401": {
                                                                   "$ref": "#/components/responses/Unauthorized",
                                                               },
                                                        "403": {
                                                                   "$ref": "#/components/responses/Forbidden",
                                                               },
                                                    },
                                   },
                            "delete": {
                                          "operationId": "cancelJob",
                                          "summary": "Cancel a job",
                                          "description": "No further runs; pending runs are cancelled and running ones aborted (their next heartbeat gets 409 `cancelled`). The job is kept, with its history: `GET` still answers it (status `CANCELLED`).",
                                          "responses": {
                                                           "200": {
                                                                      "description": "The cancelled job.",
                                                                      "content": {
                                                                                     "application/json": {
                                                                                                             "schema": {
                                                                                                                           "$ref": "#/components/schemas/Job",
                                                                                                                       },
                                                                                                         },
                                                                                 },
                                                                  },
                                                           "404": {
                                                                      "$ref": "#/components/responses/NotFound",
                                                                  },
                                                           "503": {
                                                                      "$ref": "#/components/responses/Unavailable",
                                                                  },
                                                           "401": {
                                                                      "$ref": "#/components/responses/Unauthorized",
                                                                  },
                                                           "403": {
                                                                      "$ref": "#/components/responses/Forbidden",
                                                                  },
                                                       },
                                      },
                            "patch": {
                                         "operationId": "updateJob",
                                         "summary": "Update a job in place",
                                         "description": "A JSON merge patch (RFC 7386) of the job's definition, in the members of a create body (`JobRequest`): the members named replace the job's (`retryPolicy` merges member by member), `null` removes an optional member (its default applies again), the others are kept. `schedule` and `runAt` replace each other, and so do the targets (`command`, `http`, `python`, `queue`, `target`; a target is replaced whole). The result is validated exactly as a create body, with the same errors. The job keeps its id, tenant and history. When the schedule, runAt or timezone changes, `nextRunAt` is recomputed from now, a finished one-off job is scheduled again, and executions claimed ahead for the old schedule (PENDING, never started, not yet due) are cancelled with the reason `superseded`; executions already due or running go on. Every execution runs the definition current when it starts (target, payload, timeouts); it keeps the priority and maxAttempts it was created with.",
                                         "requestBody": {
                                                            "required": True,
                                                            "content": {
                                                                           "application/json": {
                                                                                                   "schema": {
                                                                                                                 "$ref": "#/components/schemas/JobPatch",
                                                                                                             },
                                                                                               },
                                                                       },
                                                        },
                                         "responses": {
                                                          "200": {
                                                                     "description": "The updated job.",
                                                                     "content": {
                                                                                    "application/json": {
                                                                                                            "schema": {
                                                                                                                          "$ref": "#/components/schemas/Job",
                                                                                                                      },
                                                                                                        },
                                                                                },
                                                                 },
                                                          "400": {
                                                                     "$ref": "#/components/responses/BadRequest",
                                                                 },
                                                          "404": {
                                                                     "$ref": "#/components/responses/NotFound",
                                                                 },
                                                          "409": {
                                                                     "description": "The job is cancelled (`conflict`), or another live job of the tenant has the new name (`name_taken`, with that job's `jobId`).",
                                                                     "content": {
                                                                                    "application/problem+json": {
                                                                                                                    "schema": {
                                                                                                                                  "allOf": [
                                                                                                                                               {
                                                                                                                                                   "$ref": "#/components/schemas/Problem",
                                                                                                                                               },
                                                                                                                                               {
                                                                                                                                                   "type": "object",
                                                                                                                                                   "properties": {
                                                                                                                                                                     "jobId": {
                                                                                                                                                                                  "type": "string",
                                                                                                                                                                              },
                                                                                                                                                                 },
                                                                                                                                               },
                                                                                                                                           ],
                                                                                                                              },
                                                                                                                },
                                                                                },
                                                                 },
                                                          "413": {
                                                                     "$ref": "#/components/responses/PayloadTooLarge",
                                                                 },
                                                          "415": {
                                                                     "$ref": "#/components/responses/UnsupportedMediaType",
                                                                 },
                                                          "422": {
                                                                     "$ref": "#/components/responses/Unprocessable",
                                                                 },
                                                          "503": {
                                                                     "$ref": "#/components/responses/Unavailable",
                                                                 },
                                                          "401": {
                                                                     "$ref": "#/components/responses/Unauthorized",
                                                                 },
                                                          "403": {
                                                                     "$ref": "#/components/responses/Forbidden",
                                                                 },
                                                      },
                                     },
                        },
    "/v1/jobs/{jobId}/pause": {
                                  "parameters": [
                                                    {
                                                        "name": "jobId",
                                                        "in": "path",
                                                        "required": True,
                                                        "schema": {"type": "string"},
                                                        "description": "A job id (`j…`).",
                                                    },
                                                ],
                                  "post": {
                                              "operationId": "pauseJob",
                                              "summary": "Pause a job (no runs until resumed)",
                                              "responses": {
                                                               "200": {
                                                                          "description": "The paused job.",
                                                                          "content": {
                                                                                         "application/json": {
                                                                                                                 "schema": {
                                                                                                                               "$ref": "#/components/schemas/Job",
                                                                                                                           },
                                                                                                             },
                                                                                     },
                                                                          "links": {
                                                                                       "ResumeJob": {
                                                                                                        "operationId": "resumeJob",
                                                                                                        "parameters": {
                                                                                                                          "jobId": "$response.body#/jobId",
                                                                                                                      },
                                                                                                    },
                                                                                   },
                                                                      },
                                                               "404": {
                                                                          "$ref": "#/components/responses/NotFound",
                                                                      },
                                                               "409": {
                                                                          "$ref": "#/components/responses/Conflict",
                                                                      },
                                                               "503": {
                                                                          "$ref": "#/components/responses/Unavailable",
                                                                      },
                                                               "401": {
                                                                          "$ref": "#/components/responses/Unauthorized",
                                                                      },
                                                               "403": {
                                                                          "$ref": "#/components/responses/Forbidden",
                                                                      },
                                                           },
                                          },
                              },
    "/v1/jobs/{jobId}/resume": {
                                   "parameters": [
                                                     {
                                                         "name": "jobId",
                                                         "in": "path",
                                                         "required": True,
                                                         "schema": {"type": "string"},
                                                         "description": "A job id (`j…`).",
                                                     },
                                                 ],
                                   "post": {
                                               "operationId": "resumeJob",
                                               "summary": "Resume a paused job; the next run is computed from now",
                                               "responses": {
                                                                "200": {
                                                                           "description": "The active job.",
                                                                           "content": {
                                                                                          "application/json": {
                                                                                                                  "schema": {
                                                                                                                                "$ref": "#/components/schemas/Job",
                                                                                                                            },
                                                                                                              },
                                                                                      },
                                                                           "links": {
                                                                                        "PauseJob": {
                                                                                                        "operationId": "pauseJob",
                                                                                                        "parameters": {
                                                                                                                          "jobId": "$response.body#/jobId",
                                                                                                                      },
                                                                                                    },
                                                                                    },
                                                                       },
                                                                "404": {
                                                                           "$ref": "#/components/responses/NotFound",
                                                                       },
                                                                "409": {
                                                                           "$ref": "#/components/responses/Conflict",
                                                                       },
                                                                "503": {
                                                                           "$ref": "#/components/responses/Unavailable",
                                                                       },
                                                                "401": {
                                                                           "$ref": "#/components/responses/Unauthorized",
                                                                       },
                                                                "403": {
                                                                           "$ref": "#/components/responses/Forbidden",
                                                                       },
                                                            },
                                           },
                               },
    "/v1/jobs/{jobId}/trigger": {
                                    "parameters": [
                                                      {
                                                          "name": "jobId",
                                                          "in": "path",
                                                          "required": True,
                                                          "schema": {"type": "string"},
                                                          "description": "A job id (`j…`).",
                                                      },
                                                  ],
                                    "post": {
                                                "operationId": "triggerJob",
                                                "summary": "Run a job now, outside its schedule",
                                                "responses": {
                                                                 "202": {
                                                                            "description": "The new PENDING execution.",
                                                                            "content": {
                                                                                           "application/json": {
                                                                                                                   "schema": {
                                                                                                                                 "$ref": "#/components/schemas/Execution",
                                                                                                                             },
                                                                                                               },
                                                                                       },
                                                                            "headers": {
                                                                                           "Location": {
                                                                                                           "schema": {
                                                                                                                         "type": "string",
                                                                                                                     },
                                                                                                       },
                                                                                       },
                                                                            "links": {
                                                                                         "GetExecution": {
                                                                                                             "operationId": "getExecution",
                                                                                                             "parameters": {
                                                                                                                               "executionId": "$response.body#/executionId",
                                                                                                                           },
                                                                                                         },
                                                                                         "Heartbeat": {
                                                                                                          "operationId": "heartbeat",
                                                                                                          "parameters": {
                                                                                                                            "executionId": "$response.body#/executionId",
                                                                                                                        },
                                                                                                      },
                                                                                         "Complete": {
                                                                                                         "operationId": "complete",
                                                                                                         "parameters": {
                                                                                                                           "executionId": "$response.body#/executionId",
                                                                                                                       },
                                                                                                     },
                                                                                         "RecordEffect": {
                                                                                                             "operationId": "recordEffect",
                                                                                                             "parameters": {
                                                                                                                               "executionId": "$response.body#/executionId",
                                                                                                                           },
                                                                                                         },
                                                                                         "ReplayDead": {
                                                                                                           "operationId": "replayDead",
                                                                                                           "parameters": {
                                                                                                                             "executionId": "$response.body#/executionId",
                                                                                                                         },
                                                                                                       },
                                                                                         "PurgeDead": {
                                                                                                          "operationId": "purgeDead",
                                                                                                          "parameters": {
                                                                                                                            "executionId": "$response.body#/executionId",
                                                                                                                        },
                                                                                                      },
                                                                                     },
                                                                        },
                                                                 "404": {
                                                                            "$ref": "#/components/responses/NotFound",
                                                                        },
                                                                 "409": {
                                                                            "$ref": "#/components/responses/Conflict",
                                                                        },
                                                                 "503": {
                                                                            "$ref": "#/components/responses/Unavailable",
                                                                        },
                                                                 "401": {
                                                                            "$ref": "#/components/responses/Unauthorized",
                                                                        },
                                                                 "403": {
                                                                            "$ref": "#/components/responses/Forbidden",
                                                                        },
                                                             },
                                            },
                                },
    "/v1/jobs/{jobId}/executions": {
                                       "parameters": [
                                                         {
                                                             "name": "jobId",
                                                             "in": "path",
                                                             "required": True,
                                                             "schema": {"type": "string"},
                                                             "description": "A job id (`j…`).",
                                                         },
                                                     ],
                                       "get": {
                                                  "operationId": "listExecutions",
                                                  "summary": "A job's execution history, newest first",
                                                  "parameters": [
                                                                    {
                                                                        "name": "limit",
                                                                        "in": "query",
                                                                        "schema": {
                                                                                      "type": "integer",
                                                                                      "minimum": 1,
                                                                                      "maximum": 1000,
                                                                                      "default": 50,
                                                                                  },
                                                                    },
                                                                    {
                                                                        "name": "before",
                                                                        "in": "query",
                                                                        "schema": {
                                                                                      "type": "string",
                                                                                      "anyOf": [
                                                                                                   {
                                                                                                       "pattern": "^[0-9]{0,18}$",
                                                                                                   },
                                                                                                   {
                                                                                                       "format": "instant",
                                                                                                   },
                                                                                               ],
                                                                                  },
                                                                        "description": "`next` of the previous page (scheduledAt in ms, at most 18 digits), or an RFC 3339 instant with a UTC offset (format `instant`); empty: the newest.",
                                                                    },
                                                                ],
                                                  "responses": {
                                                                   "200": {
                                                                              "description": "A page of executions.",
                                                                              "content": {
                                                                                             "application/json": {
                                                                                                                     "schema": {
                                                                                                                                   "$ref": "#/components/schemas/ExecutionPage",
                                                                                                                               },
                                                                                                                 },
                                                                                         },
                                                                              "links": {
                                                                                           "GetFirstExecution": {
                                                                                                                    "operationId": "getExecution",
                                                                                                                    "parameters": {
                                                                                                                                      "executionId": "$response.body#/executions/0/executionId",
                                                                                                                                  },
                                                                                                                },
                                                                                       },
                                                                          },
                                                                   "400": {
                                                                              "$ref": "#/components/responses/BadRequest",
                                                                          },
                                                                   "404": {
                                                                              "$ref": "#/components/responses/NotFound",
                                                                          },
                                                                   "503": {
                                                                              "$ref": "#/components/responses/Unavailable",
                                                                          },
                                                                   "401": {
                                                                              "$ref": "#/components/responses/Unauthorized",
                                                                          },
                                                                   "403": {
                                                                              "$ref": "#/components/responses/Forbidden",
                                                                          },
                                                               },
                                              },
                                   },
    "/v1/jobs/{jobId}/backfill": {
                                     "parameters": [
                                                       {
                                                           "name": "jobId",
                                                           "in": "path",
                                                           "required": True,
                                                           "schema": {"type": "string"},
                                                           "description": "A job id (`j…`) or its unique name.",
                                                       },
                                                   ],
                                     "post": {
                                                 "operationId": "backfillJob",
                                                 "summary": "Run a job for every tick of a past range that has no execution yet",
                                                 "description": "One execution per tick of `[from, to]` of the job's schedule (its active window and calendars applied) that has none yet, at batch priority, so live work goes first. The `(jobId, scheduledAt)` identity makes a repeated backfill create nothing.",
                                                 "requestBody": {
                                                                    "required": True,
                                                                    "content": {
                                                                                   "application/json": {
                                                                                                           "schema": {
                                                                                                                         "$ref": "#/components/schemas/BackfillRequest",
                                                                                                                     },
                                                                                                       },
                                                                               },
                                                                },
                                                 "responses": {
                                                                  "200": {
                                                                             "description": "dryRun: the plan.",
                                                                             "content": {
                                                                                            "application/json": {
                                                                                                                    "schema": {
                                                                                                                                  "$ref": "#/components/schemas/BackfillResult",
                                                                                                                              },
                                                                                                                },
                                                                                        },
                                                                         },
                                                                  "202": {
                                                                             "description": "The executions created.",
                                                                             "content": {
                                                                                            "application/json": {
                                                                                                                    "schema": {
                                                                                                                                  "$ref": "#/components/schemas/BackfillResult",
                                                                                                                              },
                                                                                                                },
                                                                                        },
                                                                         },
                                                                  "400": {
                                                                             "$ref": "#/components/responses/BadRequest",
                                                                         },
                                                                  "404": {
                                                                             "$ref": "#/components/responses/NotFound",
                                                                         },
                                                                  "409": {
                                                                             "$ref": "#/components/responses/Conflict",
                                                                         },
                                                                  "422": {
                                                                             "$ref": "#/components/responses/Unprocessable",
                                                                         },
                                                                  "401": {
                                                                             "$ref": "#/components/responses/Unauthorized",
                                                                         },
                                                                  "403": {
                                                                             "$ref": "#/components/responses/Forbidden",
                                                                         },
                                                                  "503": {
                                                                             "$ref": "#/components/responses/Unavailable",
                                                                         },
                                                              },
                                             },
                                     "delete": {
                                                   "operationId": "cancelBackfill",
                                                   "summary": "Cancel a job's backfill executions that have not started",
                                                   "responses": {
                                                                    "200": {
                                                                               "description": "How many were cancelled.",
                                                                               "content": {
                                                                                              "application/json": {
                                                                                                                      "schema": {
                                                                                                                                    "$ref": "#/components/schemas/BackfillCancelled",
                                                                                                                                },
                                                                                                                  },
                                                                                          },
                                                                           },
                                                                    "404": {
                                                                               "$ref": "#/components/responses/NotFound",
                                                                           },
                                                                    "401": {
                                                                               "$ref": "#/components/responses/Unauthorized",
                                                                           },
                                                                    "403": {
                                                                               "$ref": "#/components/responses/Forbidden",
                                                                           },
                                                                    "503": {
                                                                               "$ref": "#/components/responses/Unavailable",
                                                                           },
                                                                },
                                               },
                                 },
    "/v1/jobs/{jobId}/chain": {
                                  "parameters": [
                                                    {
                                                        "name": "jobId",
                                                        "in": "path",
                                                        "required": True,
                                                        "schema": {"type": "string"},
                                                        "description": "A job id (`j…`) or its unique name.",
                                                    },
                                                ],
                                  "put": {
                                             "operationId": "setJobChain",
                                             "summary": "Replace the jobs a job triggers on its final outcomes",
                                             "requestBody": {
                                                                "required": True,
                                                                "content": {
                                                                               "application/json": {
                                                                                                       "schema": {
                                                                                                                     "$ref": "#/components/schemas/ChainRequest",
                                                                                                                 },
                                                                                                   },
                                                                           },
                                                            },
                                             "responses": {
                                                              "200": {
                                                                         "description": "The job as changed.",
                                                                         "content": {
                                                                                        "application/json": {
                                                                                                                "schema": {
                                                                                                                              "$ref": "#/components/schemas/Job",
                                                                                                                          },
                                                                                                            },
                                                                                    },
                                                                     },
                                                              "400": {
                                                                         "$ref": "#/components/responses/BadRequest",
                                                                     },
                                                              "404": {
                                                                         "$ref": "#/components/responses/NotFound",
                                                                     },
                                                              "409": {
                                                                         "$ref": "#/components/responses/Conflict",
                                                                     },
                                                              "422": {
                                                                         "$ref": "#/components/responses/Unprocessable",
                                                                     },
                                                              "401": {
                                                                         "$ref": "#/components/responses/Unauthorized",
                                                                     },
                                                              "403": {
                                                                         "$ref": "#/components/responses/Forbidden",
                                                                     },
                                                              "503": {
                                                                         "$ref": "#/components/responses/Unavailable",
                                                                     },
                                                          },
                                         },
                              },
    "/v1/jobs/{jobId}/upcoming": {
                                     "parameters": [
                                                       {
                                                           "name": "jobId",
                                                           "in": "path",
                                                           "required": True,
                                                           "schema": {"type": "string"},
                                                           "description": "A job id (`j…`) or its unique name.",
                                                       },
                                                   ],
                                     "get": {
                                                "operationId": "upcomingTicks",
                                                "summary": "A job's next ticks that will run, calendars and active window applied",
                                                "parameters": [
                                                                  {
                                                                      "name": "count",
                                                                      "in": "query",
                                                                      "required": False,
                                                                      "schema": {
                                                                                    "type": "integer",
                                                                                    "minimum": 1,
                                                                                    "maximum": 1000,
                                                                                    "default": 5,
                                                                                },
                                                                  },
                                                                  {
                                                                      "name": "from",
                                                                      "in": "query",
                                                                      "required": False,
                                                                      "schema": {
                                                                                    "type": "string",
                                                                                    "format": "date-time",
                                                                                },
                                                                      "description": "Ticks strictly after this instant (default now).",
                                                                  },
                                                              ],
                                                "responses": {
                                                                 "200": {
                                                                            "description": "The ticks, and the excluded ones met on the way.",
                                                                            "content": {
                                                                                           "application/json": {
                                                                                                                   "schema": {
                                                                                                                                 "$ref": "#/components/schemas/Upcoming",
                                                                                                                             },
                                                                                                               },
                                                                                       },
                                                                        },
                                                                 "400": {
                                                                            "$ref": "#/components/responses/BadRequest",
                                                                        },
                                                                 "404": {
                                                                            "$ref": "#/components/responses/NotFound",
                                                                        },
                                                                 "401": {
                                                                            "$ref": "#/components/responses/Unauthorized",
                                                                        },
                                                                 "403": {
                                                                            "$ref": "#/components/responses/Forbidden",
                                                                        },
                                                                 "503": {
                                                                            "$ref": "#/components/responses/Unavailable",
                                                                        },
                                                             },
                                            },
                                 },
    "/v1/calendars": {
                         "get": {
                                    "operationId": "listCalendars",
                                    "summary": "Calendars (a tenant's own; an admin's: every tenant's, or one with ?tenant=)",
                                    "parameters": [
                                                      {
                                                          "name": "tenant",
                                                          "in": "query",
                                                          "required": False,
                                                          "schema": {
                                                                        "type": "string",
                                                                        "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$",
                                                                    },
                                                          "description": "Admin only: the tenant whose calendar this is (default `default`). A tenant token always means its own tenant.",
                                                      },
                                                  ],
                                    "responses": {
                                                     "200": {
                                                                "description": "The calendars.",
                                                                "content": {
                                                                               "application/json": {
                                                                                                       "schema": {
                                                                                                                     "$ref": "#/components/schemas/CalendarList",
                                                                                                                 },
                                                                                                   },
                                                                           },
                                                            },
                                                     "400": {
                                                                "$ref": "#/components/responses/BadRequest",
                                                            },
                                                     "401": {
                                                                "$ref": "#/components/responses/Unauthorized",
                                                            },
                                                     "403": {
                                                                "$ref": "#/components/responses/Forbidden",
                                                            },
                                                     "503": {
                                                                "$ref": "#/components/responses/Unavailable",
                                                            },
                                                 },
                                },
                     },
    "/v1/calendars/{name}": {
                                "parameters": [
                                                  {
                                                      "name": "name",
                                                      "in": "path",
                                                      "required": True,
                                                      "schema": {
                                                                    "type": "string",
                                                                    "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$",
                                                                },
                                                      "description": "A calendar name.",
                                                  },
                                              ],
                                "get": {
                                           "operationId": "getCalendar",
                                           "summary": "One calendar",
                                           "parameters": [
                                                             {
                                                                 "name": "tenant",
                                                                 "in": "query",
                                                                 "required": False,
                                                                 "schema": {
                                                                               "type": "string",
                                                                               "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$",
                                                                           },
                                                                 "description": "Admin only: the tenant whose calendar this is (default `default`). A tenant token always means its own tenant.",
                                                             },
                                                         ],
                                           "responses": {
                                                            "200": {
                                                                       "description": "The calendar.",
                                                                       "content": {
                                                                                      "application/json": {
                                                                                                              "schema": {
                                                                                                                            "$ref": "#/components/schemas/Calendar",
                                                                                                                        },
                                                                                                          },
                                                                                  },
                                                                   },
                                                            "400": {
                                                                       "$ref": "#/components/responses/BadRequest",
                                                                   },
                                                            "404": {
                                                                       "$ref": "#/components/responses/NotFound",
                                                                   },
                                                            "401": {
                                                                       "$ref": "#/components/responses/Unauthorized",
                                                                   },
                                                            "403": {
                                                                       "$ref": "#/components/responses/Forbidden",
                                                                   },
                                                            "503": {
                                                                       "$ref": "#/components/responses/Unavailable",
                                                                   },
                                                        },
                                       },
                                "put": {
                                           "operationId": "putCalendar",
                                           "summary": "Create or replace a calendar",
                                           "parameters": [
                                                             {
                                                                 "name": "tenant",
                                                                 "in": "query",
                                                                 "required": False,
                                                                 "schema": {
                                                                               "type": "string",
                                                                               "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$",
                                                                           },
                                                                 "description": "Admin only: the tenant whose calendar this is (default `default`). A tenant token always means its own tenant.",
                                                             },
                                                         ],
                                           "requestBody": {
                                                              "required": True,
                                                              "content": {
                                                                             "application/json": {
                                                                                                     "schema": {
                                                                                                                   "$ref": "#/components/schemas/CalendarRequest",
                                                                                                               },
                                                                                                 },
                                                                         },
                                                          },
                                           "responses": {
                                                            "200": {
                                                                       "description": "The calendar as stored.",
                                                                       "content": {
                                                                                      "application/json": {
                                                                                                              "schema": {
                                                                                                                            "$ref": "#/components/schemas/Calendar",
                                                                                                                        },
                                                                                                          },
                                                                                  },
                                                                   },
                                                            "400": {
                                                                       "$ref": "#/components/responses/BadRequest",
                                                                   },
                                                            "404": {
                                                                       "$ref": "#/components/responses/NotFound",
                                                                   },
                                                            "422": {
                                                                       "$ref": "#/components/responses/Unprocessable",
                                                                   },
                                                            "401": {
                                                                       "$ref": "#/components/responses/Unauthorized",
                                                                   },
                                                            "403": {
                                                                       "$ref": "#/components/responses/Forbidden",
                                                                   },
                                                            "503": {
                                                                       "$ref": "#/components/responses/Unavailable",
                                                                   },
                                                        },
                                       },
                                "delete": {
                                              "operationId": "deleteCalendar",
                                              "summary": "Delete a calendar (409 while a job observes it)",
                                              "parameters": [
                                                                {
                                                                    "name": "tenant",
                                                                    "in": "query",
                                                                    "required": False,
                                                                    "schema": {
                                                                                  "type": "string",
                                                                                  "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$",
                                                                              },
                                                                    "description": "Admin only: the tenant whose calendar this is (default `default`). A tenant token always means its own tenant.",
                                                                },
                                                            ],
                                              "responses": {
                                                               "204": {"description": "Deleted."},
                                                               "400": {
                                                                          "$ref": "#/components/responses/BadRequest",
                                                                      },
                                                               "404": {
                                                                          "$ref": "#/components/responses/NotFound",
                                                                      },
                                                               "409": {
                                                                          "$ref": "#/components/responses/Conflict",
                                                                      },
                                                               "401": {
                                                                          "$ref": "#/components/responses/Unauthorized",
                                                                      },
                                                               "403": {
                                                                          "$ref": "#/components/responses/Forbidden",
                                                                      },
                                                               "503": {
                                                                          "$ref": "#/components/responses/Unavailable",
                                                                      },
                                                           },
                                          },
                            },
    "/v1/executions/{executionId}": {
                                        "parameters": [
                                                          {
                                                              "name": "executionId",
                                                              "in": "path",
                                                              "required": True,
                                                              "schema": {"type": "string"},
                                                              "description": "An execution id, `{jobId}:{scheduledAtMs}`.",
                                                          },
                                                      ],
                                        "get": {
                                                   "operationId": "getExecution",
                                                   "summary": "An execution, with its output tail",
                                                   "responses": {
                                                                    "200": {
                                                                               "description": "The execution.",
                                                                               "content": {
                                                                                              "application/json": {
                                                                                                                      "schema": {
                                                                                                                                    "$ref": "#/components/schemas/Execution",
                                                                                                                                },
                                                                                                                  },
                                                                                          },
                                                                           },
                                                                    "404": {
                                                                               "$ref": "#/components/responses/NotFound",
                                                                           },
                                                                    "503": {
                                                                               "$ref": "#/components/responses/Unavailable",
                                                                           },
                                                                    "401": {
                                                                               "$ref": "#/components/responses/Unauthorized",
                                                                           },
                                                                    "403": {
                                                                               "$ref": "#/components/responses/Forbidden",
                                                                           },
                                                                },
                                               },
                                    },
    "/v1/workers/claim": {
                             "post": {
                                         "operationId": "claimExecutions",
                                         "summary": "Remote workers: lease executions of queue targets (long poll)",
                                         "description": "Takes up to `max` dispatchable executions of the given queues, oldest first, each started with `leaseEpoch` + 1 exactly as a local worker's would be. Worker tokens see their tenant's executions only. Two concurrent claimers never get the same execution.",
                                         "requestBody": {
                                                            "required": True,
                                                            "content": {
                                                                           "application/json": {
                                                                                                   "schema": {
                                                                                                                 "$ref": "#/components/schemas/ClaimRequest",
                                                                                                             },
                                                                                               },
                                                                       },
                                                        },
                                         "responses": {
                                                          "200": {
                                                                     "description": "The executions now leased to the caller (an empty list when none came within waitSec).",
                                                                     "content": {
                                                                                    "application/json": {
                                                                                                            "schema": {
                                                                                                                          "$ref": "#/components/schemas/ClaimResponse",
                                                                                                                      },
                                                                                                        },
                                                                                },
                                                                     "links": {
                                                                                  "Heartbeat": {
                                                                                                   "operationId": "heartbeat",
                                                                                                   "parameters": {
                                                                                                                     "executionId": "$response.body#/executions/0/executionId",
                                                                                                                 },
                                                                                               },
                                                                                  "Complete": {
                                                                                                  "operationId": "complete",
                                                                                                  "parameters": {
                                                                                                                    "executionId": "$response.body#/executions/0/executionId",
                                                                                                                },
                                                                                              },
                                                                                  "RecordEffect": {
                                                                                                      "operationId": "recordEffect",
                                                                                                      "parameters": {
                                                                                                                        "executionId": "$response.body#/executions/0/executionId",
                                                                                                                    },
                                                                                                  },
                                                                              },
                                                                 },
                                                          "400": {
                                                                     "$ref": "#/components/responses/BadRequest",
                                                                 },
                                                          "413": {
                                                                     "$ref": "#/components/responses/PayloadTooLarge",
                                                                 },
                                                          "415": {
                                                                     "$ref": "#/components/responses/UnsupportedMediaType",
                                                                 },
                                                          "422": {
                                                                     "$ref": "#/components/responses/Unprocessable",
                                                                 },
                                                          "503": {
                                                                     "$ref": "#/components/responses/Unavailable",
                                                                 },
                                                          "401": {
                                                                     "$ref": "#/components/responses/Unauthorized",
                                                                 },
                                                          "403": {
                                                                     "$ref": "#/components/responses/Forbidden",
                                                                 },
                                                      },
                                     },
                         },
    "/v1/executions/{executionId}/heartbeat": {
                                                  "parameters": [
                                                                    {
                                                                        "name": "executionId",
                                                                        "in": "path",
                                                                        "required": True,
                                                                        "schema": {"type": "string"},
                                                                        "description": "An execution id, `{jobId}:{scheduledAtMs}`.",
                                                                    },
                                                                ],
                                                  "post": {
                                                              "operationId": "heartbeat",
                                                              "summary": "Extend a lease (fenced by leaseEpoch)",
                                                              "description": "A worker aborts immediately if it receives 409.",
                                                              "requestBody": {
                                                                                 "required": True,
                                                                                 "content": {
                                                                                                "application/json": {
                                                                                                                        "schema": {
                                                                                                                                      "$ref": "#/components/schemas/LeaseRequest",
                                                                                                                                  },
                                                                                                                    },
                                                                                            },
                                                                             },
                                                              "responses": {
                                                                               "200": {
                                                                                          "description": "Lease extended.",
                                                                                          "content": {
                                                                                                         "application/json": {
                                                                                                                                 "schema": {
                                                                                                                                               "$ref": "#/components/schemas/HeartbeatResponse",
                                                                                                                                           },
                                                                                                                             },
                                                                                                     },
                                                                                      },
                                                                               "409": {
                                                                                          "$ref": "#/components/responses/LeaseConflict",
                                                                                      },
                                                                               "400": {
                                                                                          "$ref": "#/components/responses/BadRequest",
                                                                                      },
                                                                               "413": {
                                                                                          "$ref": "#/components/responses/PayloadTooLarge",
                                                                                      },
                                                                               "415": {
                                                                                          "$ref": "#/components/responses/UnsupportedMediaType",
                                                                                      },
                                                                               "422": {
                                                                                          "$ref": "#/components/responses/Unprocessable",
                                                                                      },
                                                                               "404": {
                                                                                          "$ref": "#/components/responses/NotFound",
                                                                                      },
                                                                               "503": {
                                                                                          "$ref": "#/components/responses/Unavailable",
                                                                                      },
                                                                               "401": {
                                                                                          "$ref": "#/components/responses/Unauthorized",
                                                                                      },
                                                                               "403": {
                                                                                          "$ref": "#/components/responses/Forbidden",
                                                                                      },
                                                                           },
                                                          },
                                              },
    "/v1/executions/{executionId}/complete": {
                                                 "parameters": [
                                                                   {
                                                                       "name": "executionId",
                                                                       "in": "path",
                                                                       "required": True,
                                                                       "schema": {"type": "string"},
                                                                       "description": "An execution id, `{jobId}:{scheduledAtMs}`.",
                                                                   },
                                                               ],
                                                 "post": {
                                                             "operationId": "complete",
                                                             "summary": "Report a run's result (fenced by leaseEpoch)",
                                                             "requestBody": {
                                                                                "required": True,
                                                                                "content": {
                                                                                               "application/json": {
                                                                                                                       "schema": {
                                                                                                                                     "$ref": "#/components/schemas/CompleteRequest",
                                                                                                                                 },
                                                                                                                   },
                                                                                           },
                                                                            },
                                                             "responses": {
                                                                              "200": {
                                                                                         "description": "Applied: the execution's status afterwards.",
                                                                                         "content": {
                                                                                                        "application/json": {
                                                                                                                                "schema": {
                                                                                                                                              "$ref": "#/components/schemas/CompleteResponse",
                                                                                                                                          },
                                                                                                                            },
                                                                                                    },
                                                                                     },
                                                                              "409": {
                                                                                         "$ref": "#/components/responses/LeaseConflict",
                                                                                     },
                                                                              "400": {
                                                                                         "$ref": "#/components/responses/BadRequest",
                                                                                     },
                                                                              "413": {
                                                                                         "$ref": "#/components/responses/PayloadTooLarge",
                                                                                     },
                                                                              "415": {
                                                                                         "$ref": "#/components/responses/UnsupportedMediaType",
                                                                                     },
                                                                              "422": {
                                                                                         "$ref": "#/components/responses/Unprocessable",
                                                                                     },
                                                                              "404": {
                                                                                         "$ref": "#/components/responses/NotFound",
                                                                                     },
                                                                              "503": {
                                                                                         "$ref": "#/components/responses/Unavailable",
                                                                                     },
                                                                              "401": {
                                                                                         "$ref": "#/components/responses/Unauthorized",
                                                                                     },
                                                                              "403": {
                                                                                         "$ref": "#/components/responses/Forbidden",
                                                                                     },
                                                                          },
                                                         },
                                             },
    "/v1/executions/{executionId}/effects": {
                                                "parameters": [
                                                                  {
                                                                      "name": "executionId",
                                                                      "in": "path",
                                                                      "required": True,
                                                                      "schema": {"type": "string"},
                                                                      "description": "An execution id, `{jobId}:{scheduledAtMs}`.",
                                                                  },
                                                              ],
                                                "post": {
                                                            "operationId": "recordEffect",
                                                            "summary": "Record a side effect once (execution idempotency, fenced by leaseEpoch)",
                                                            "requestBody": {
                                                                               "required": True,
                                                                               "content": {
                                                                                              "application/json": {
                                                                                                                      "schema": {
                                                                                                                                    "$ref": "#/components/schemas/EffectRequest",
                                                                                                                                },
                                                                                                                  },
                                                                                          },
                                                                           },
                                                            "responses": {
                                                                             "201": {
                                                                                        "description": "Recorded: perform the effect.",
                                                                                        "content": {
                                                                                                       "application/json": {
                                                                                                                               "schema": {
                                                                                                                                             "$ref": "#/components/schemas/EffectResponse",
                                                                                                                                         },
                                                                                                                           },
                                                                                                   },
                                                                                    },
                                                                             "200": {
                                                                                        "description": "Duplicate: the effect was already recorded; do not repeat it.",
                                                                                        "content": {
                                                                                                       "application/json": {
                                                                                                                               "schema": {
                                                                                                                                             "$ref": "#/components/schemas/EffectResponse",
                                                                                                                                         },
                                                                                                                           },
                                                                                                   },
                                                                                    },
                                                                             "409": {
                                                                                        "description": "Fenced (`reason: fenced`): stale leaseEpoch or not running; nothing recorded, abort.",
                                                                                        "content": {
                                                                                                       "application/problem+json": {
                                                                                                                                       "schema": {
                                                                                                                                                     "$ref": "#/components/schemas/Problem",
                                                                                                                                                 },
                                                                                                                                   },
                                                                                                   },
                                                                                    },
                                                                             "400": {
                                                                                        "$ref": "#/components/responses/BadRequest",
                                                                                    },
                                                                             "413": {
                                                                                        "$ref": "#/components/responses/PayloadTooLarge",
                                                                                    },
                                                                             "415": {
                                                                                        "$ref": "#/components/responses/UnsupportedMediaType",
                                                                                    },
                                                                             "422": {
                                                                                        "$ref": "#/components/responses/Unprocessable",
                                                                                    },
                                                                             "404": {
                                                                                        "$ref": "#/components/responses/NotFound",
                                                                                    },
                                                                             "503": {
                                                                                        "$ref": "#/components/responses/Unavailable",
                                                                                    },
                                                                             "401": {
                                                                                        "$ref": "#/components/responses/Unauthorized",
                                                                                    },
                                                                             "403": {
                                                                                        "$ref": "#/components/responses/Forbidden",
                                                                                    },
                                                                         },
                                                        },
                                            },
    "/v1/dlq": {
                   "get": {
                              "operationId": "listDead",
                              "summary": "The dead-letter queue, ordered by execution id",
                              "parameters": [
                                                {
                                                    "name": "limit",
                                                    "in": "query",
                                                    "schema": {
                                                                  "type": "integer",
                                                                  "minimum": 1,
                                                                  "maximum": 1000,
                                                                  "default": 100,
                                                              },
                                                },
                                                {
                                                    "name": "after",
                                                    "in": "query",
                                                    "schema": {"type": "string"},
                                                },
                                            ],
                              "responses": {
                                               "200": {
                                                          "description": "A page of DEAD executions.",
                                                          "content": {
                                                                         "application/json": {
                                                                                                 "schema": {
                                                                                                               "$ref": "#/components/schemas/ExecutionPage",
                                                                                                           },
                                                                                             },
                                                                     },
                                                          "links": {
                                                                       "ReplayDead": {
                                                                                         "operationId": "replayDead",
                                                                                         "parameters": {
                                                                                                           "executionId": "$response.body#/executions/0/executionId",
                                                                                                       },
                                                                                     },
                                                                       "PurgeDead": {
                                                                                        "operationId": "purgeDead",
                                                                                        "parameters": {
                                                                                                          "executionId": "$response.body#/executions/0/executionId",
                                                                                                      },
                                                                                    },
                                                                   },
                                                      },
                                               "400": {"$ref": "#/components/responses/BadRequest"},
                                               "503": {"$ref": "#/components/responses/Unavailable"},
                                               "401": {
                                                          "$ref": "#/components/responses/Unauthorized",
                                                      },
                                               "403": {"$ref": "#/components/responses/Forbidden"},
                                           },
                          },
               },
    "/v1/dlq/{executionId}/replay": {
                                        "parameters": [
                                                          {
                                                              "name": "executionId",
                                                              "in": "path",
                                                              "required": True,
                                                              "schema": {"type": "string"},
                                                              "description": "An execution id, `{jobId}:{scheduledAtMs}`.",
                                                          },
                                                      ],
                                        "post": {
                                                    "operationId": "replayDead",
                                                    "summary": "Replay a dead-lettered execution (a fresh series of attempts)",
                                                    "responses": {
                                                                     "200": {
                                                                                "description": "The PENDING execution.",
                                                                                "content": {
                                                                                               "application/json": {
                                                                                                                       "schema": {
                                                                                                                                     "$ref": "#/components/schemas/Execution",
                                                                                                                                 },
                                                                                                                   },
                                                                                           },
                                                                            },
                                                                     "404": {
                                                                                "$ref": "#/components/responses/NotFound",
                                                                            },
                                                                     "503": {
                                                                                "$ref": "#/components/responses/Unavailable",
                                                                            },
                                                                     "401": {
                                                                                "$ref": "#/components/responses/Unauthorized",
                                                                            },
                                                                     "403": {
                                                                                "$ref": "#/components/responses/Forbidden",
                                                                            },
                                                                 },
                                                },
                                    },
    "/v1/dlq/{executionId}": {
                                 "parameters": [
                                                   {
                                                       "name": "executionId",
                                                       "in": "path",
                                                       "required": True,
                                                       "schema": {"type": "string"},
                                                       "description": "An execution id, `{jobId}:{scheduledAtMs}`.",
                                                   },
                                               ],
                                 "delete": {
                                               "operationId": "purgeDead",
                                               "summary": "Delete a dead-lettered execution",
                                               "responses": {
                                                                "200": {
                                                                           "description": "Purged.",
                                                                           "content": {
                                                                                          "application/json": {
                                                                                                                  "schema": {
                                                                                                                                "$ref": "#/components/schemas/Purged",
                                                                                                                            },
                                                                                                              },
                                                                                      },
                                                                       },
                                                                "404": {
                                                                           "$ref": "#/components/responses/NotFound",
                                                                       },
                                                                "503": {
                                                                           "$ref": "#/components/responses/Unavailable",
                                                                       },
                                                                "401": {
                                                                           "$ref": "#/components/responses/Unauthorized",
                                                                       },
                                                                "403": {
                                                                           "$ref": "#/components/responses/Forbidden",
                                                                       },
                                                            },
                                           },
                             },
    "/v1/status": {
                      "get": {
                                 "operationId": "status",
                                 "summary": "Node health and counters",
                                 "responses": {
                                                  "200": {
                                                             "description": "Status.",
                                                             "content": {
                                                                            "application/json": {
                                                                                                    "schema": {
                                                                                                                  "$ref": "#/components/schemas/Status",
                                                                                                              },
                                                                                                },
                                                                        },
                                                         },
                                                  "503": {
                                                             "$ref": "#/components/responses/Unavailable",
                                                         },
                                                  "401": {
                                                             "$ref": "#/components/responses/Unauthorized",
                                                         },
                                                  "403": {
                                                             "$ref": "#/components/responses/Forbidden",
                                                         },
                                              },
                             },
                  },
    "/v1/herd": {
                    "get": {
                               "operationId": "herd",
                               "summary": "The herd preview: ticks per second of the active jobs over the coming window",
                               "description": "Counts every tick of every ACTIVE job (a tenant token: its own jobs; admin: all) in each second of [now, now + window), and summarises the busiest seconds, the total, max and p99 per second, and ticks per minute. One-off jobs count at their run time; jitterSec is not applied (it delays dispatch, not the tick).",
                               "parameters": [
                                                 {
                                                     "name": "window",
                                                     "in": "query",
                                                     "schema": {
                                                                   "type": "integer",
                                                                   "minimum": 60,
                                                                   "maximum": 86400,
                                                                   "default": 3600,
                                                               },
                                                     "description": "Seconds from now.",
                                                 },
                                                 {
                                                     "name": "top",
                                                     "in": "query",
                                                     "schema": {
                                                                   "type": "integer",
                                                                   "minimum": 1,
                                                                   "maximum": 100,
                                                                   "default": 10,
                                                               },
                                                     "description": "How many of the busiest seconds to list.",
                                                 },
                                             ],
                               "responses": {
                                                "200": {
                                                           "description": "The herd summary.",
                                                           "content": {
                                                                          "application/json": {
                                                                                                  "schema": {
                                                                                                                "$ref": "#/components/schemas/Herd",
                                                                                                            },
                                                                                              },
                                                                      },
                                                       },
                                                "400": {"$ref": "#/components/responses/BadRequest"},
                                                "503": {
                                                           "$ref": "#/components/responses/Unavailable",
                                                       },
                                                "401": {
                                                           "$ref": "#/components/responses/Unauthorized",
                                                       },
                                                "403": {"$ref": "#/components/responses/Forbidden"},
                                            },
                           },
                },
    "/v1/status/activity": {
                               "get": {
                                          "operationId": "activity",
                                          "summary": "The last hour's dispatch lag per minute, and what this node's workers run now",
                                          "description": "Admin only. lagHistory: one entry per minute for the last 60 minutes, oldest first, the current (partial) minute last; p50/p99/max of the first attempts that started in that minute (startedAt - scheduledAt), from a log-linear histogram that may overstate a percentile by up to 6.25 % and never understates it; null when no execution started that minute. running: executions in this node's local workers, longest-running first (at most 100; runningTotal counts all of them). The dashboard's overview draws these.",
                                          "responses": {
                                                           "200": {
                                                                      "description": "Activity.",
                                                                      "content": {
                                                                                     "application/json": {
                                                                                                             "schema": {
                                                                                                                           "$ref": "#/components/schemas/Activity",
                                                                                                                       },
                                                                                                         },
                                                                                 },
                                                                  },
                                                           "401": {
                                                                      "$ref": "#/components/responses/Unauthorized",
                                                                  },
                                                           "403": {
                                                                      "$ref": "#/components/responses/Forbidden",
                                                                  },
                                                       },
                                      },
                           },
    "/healthz": {
                    "get": {
                               "operationId": "healthz",
                               "summary": "Liveness",
                               "responses": {
                                                "200": {
                                                           "description": "Alive.",
                                                           "content": {
                                                                          "application/json": {
                                                                                                  "schema": {
                                                                                                                "$ref": "#/components/schemas/Health",
                                                                                                            },
                                                                                              },
                                                                      },
                                                       },
                                            },
                               "security": [],
                           },
                },
    "/v1/openapi.json": {
                            "get": {
                                       "operationId": "openapi",
                                       "summary": "This document",
                                       "responses": {
                                                        "200": {
                                                                   "description": "OpenAPI 3.1 document.",
                                                                   "content": {
                                                                                  "application/json": {
                                                                                                          "schema": {
                                                                                                                        "type": "object",
                                                                                                                    },
                                                                                                      },
                                                                              },
                                                               },
                                                        "401": {
                                                                   "$ref": "#/components/responses/Unauthorized",
                                                               },
                                                    },
                                   },
                        },
    "/v1/events": {
                      "get": {
                                 "operationId": "streamEvents",
                                 "summary": "The daemon's event log as newline-delimited JSON, optionally followed",
                                 "description": "The matching tail of the node's recent events (its ring buffer), one JSON object per line (`{ts, event, node, seq, ...}`). With `follow=1` the response stays open and every new matching event is written as it happens (`cronwheel logs -f`). Each follower has a bounded buffer: a client that reads too slowly loses events and receives a `{\"event\": \"stream.dropped\", \"dropped\": N}` line in their place. The stream ends when the daemon shuts down.",
                                 "parameters": [
                                                   {
                                                       "name": "follow",
                                                       "in": "query",
                                                       "description": "1: keep the response open and stream new events.",
                                                       "schema": {
                                                                     "type": "string",
                                                                     "enum": [
                                                                                 "0",
                                                                                 "1",
                                                                                 "true",
                                                                                 "false",
                                                                             ],
                                                                     "default": "0",
                                                                 },
                                                   },
                                                   {
                                                       "name": "job",
                                                       "in": "query",
                                                       "description": "Only events of this job id (or of its executions).",
                                                       "schema": {"type": "string"},
                                                   },
                                                   {
                                                       "name": "event",
                                                       "in": "query",
                                                       "description": "Only this event name, or names starting with a prefix that ends in '.' (`execution.`).",
                                                       "schema": {"type": "string"},
                                                   },
                                                   {
                                                       "name": "since",
                                                       "in": "query",
                                                       "description": "Only events not older than this: a duration back from now (`90s`, `1h`, `2d`) or an RFC 3339 instant.",
                                                       "schema": {"type": "string"},
                                                   },
                                                   {
                                                       "name": "n",
                                                       "in": "query",
                                                       "description": "How many past events to send first (default 100, or 10 with follow=1).",
                                                       "schema": {
                                                                     "type": "integer",
                                                                     "minimum": 0,
                                                                     "maximum": 10000,
                                                                 },
                                                   },
                                               ],
                                 "responses": {
                                                  "200": {
                                                             "description": "Events, one JSON object per line.",
                                                             "content": {
                                                                            "application/x-ndjson": {
                                                                                                        "schema": {
                                                                                                                      "$ref": "#/components/schemas/Event",
                                                                                                                  },
                                                                                                    },
                                                                        },
                                                         },
                                                  "400": {
                                                             "$ref": "#/components/responses/BadRequest",
                                                         },
                                                  "401": {
                                                             "$ref": "#/components/responses/Unauthorized",
                                                         },
                                                  "403": {
                                                             "$ref": "#/components/responses/Forbidden",
                                                         },
                                              },
                             },
                  },
    "/metrics": {
                    "get": {
                               "operationId": "metrics",
                               "summary": "Prometheus metrics of this node",
                               "description": "Prometheus text exposition format. Metric names and labels are listed in docs/operations.md; labels never carry job or execution ids. Admin and metrics tokens (`cronwheel token create --role metrics`).",
                               "responses": {
                                                "200": {
                                                           "description": "Metrics.",
                                                           "content": {
                                                                          "text/plain": {
                                                                                            "schema": {
                                                                                                          "type": "string",
                                                                                                      },
                                                                                        },
                                                                      },
                                                       },
                                                "401": {
                                                           "$ref": "#/components/responses/Unauthorized",
                                                       },
                                                "403": {"$ref": "#/components/responses/Forbidden"},
                                            },
                           },
                },
    "/v1/tenants": {
                       "get": {
                                  "operationId": "listTenants",
                                  "summary": "List tenants (admin)",
                                  "description": "Every tenant with its settings and this node's live numbers.",
                                  "responses": {
                                                   "200": {
                                                              "description": "Tenants.",
                                                              "content": {
                                                                             "application/json": {
                                                                                                     "schema": {
                                                                                                                   "$ref": "#/components/schemas/TenantList",
                                                                                                               },
                                                                                                 },
                                                                         },
                                                              "links": {
                                                                           "UpdateFirstTenant": {
                                                                                                    "operationId": "updateTenant",
                                                                                                    "parameters": {
                                                                                                                      "name": "$response.body#/tenants/0/name",
                                                                                                                  },
                                                                                                },
                                                                       },
                                                          },
                                                   "401": {
                                                              "$ref": "#/components/responses/Unauthorized",
                                                          },
                                                   "403": {
                                                              "$ref": "#/components/responses/Forbidden",
                                                          },
                                                   "503": {
                                                              "$ref": "#/components/responses/Unavailable",
                                                          },
                                               },
                              },
                       "post": {
                                   "operationId": "createTenant",
                                   "summary": "Create a tenant (admin)",
                                   "requestBody": {
                                                      "required": True,
                                                      "content": {
                                                                     "application/json": {
                                                                                             "schema": {
                                                                                                           "$ref": "#/components/schemas/TenantRequest",
                                                                                                       },
                                                                                         },
                                                                 },
                                                  },
                                   "responses": {
                                                    "201": {
                                                               "description": "Created.",
                                                               "content": {
                                                                              "application/json": {
                                                                                                      "schema": {
                                                                                                                    "$ref": "#/components/schemas/Tenant",
                                                                                                                },
                                                                                                  },
                                                                          },
                                                               "links": {
                                                                            "UpdateTenant": {
                                                                                                "operationId": "updateTenant",
                                                                                                "parameters": {
                                                                                                                  "name": "$response.body#/name",
                                                                                                              },
                                                                                            },
                                                                        },
                                                           },
                                                    "400": {
                                                               "$ref": "#/components/responses/BadRequest",
                                                           },
                                                    "401": {
                                                               "$ref": "#/components/responses/Unauthorized",
                                                           },
                                                    "403": {
                                                               "$ref": "#/components/responses/Forbidden",
                                                           },
                                                    "409": {
                                                               "$ref": "#/components/responses/Conflict",
                                                           },
                                                    "422": {
                                                               "$ref": "#/components/responses/Unprocessable",
                                                           },
                                                    "503": {
                                                               "$ref": "#/components/responses/Unavailable",
                                                           },
                                                },
                               },
                   },
    "/v1/tenants/{name}": {
                              "parameters": [
                                                {
                                                    "name": "name",
                                                    "in": "path",
                                                    "required": True,
                                                    "schema": {"type": "string"},
                                                    "description": "A tenant name.",
                                                },
                                            ],
                              "patch": {
                                           "operationId": "updateTenant",
                                           "summary": "Change a tenant's weight, quotas or permissions (admin)",
                                           "requestBody": {
                                                              "required": True,
                                                              "content": {
                                                                             "application/json": {
                                                                                                     "schema": {
                                                                                                                   "$ref": "#/components/schemas/TenantPatch",
                                                                                                               },
                                                                                                 },
                                                                         },
                                                          },
                                           "responses": {
                                                            "200": {
                                                                       "description": "The tenant as changed.",
                                                                       "content": {
                                                                                      "application/json": {
                                                                                                              "schema": {
                                                                                                                            "$ref": "#/components/schemas/Tenant",
                                                                                                                        },
                                                                                                          },
                                                                                  },
                                                                   },
                                                            "400": {
                                                                       "$ref": "#/components/responses/BadRequest",
                                                                   },
                                                            "401": {
                                                                       "$ref": "#/components/responses/Unauthorized",
                                                                   },
                                                            "403": {
                                                                       "$ref": "#/components/responses/Forbidden",
                                                                   },
                                                            "404": {
                                                                       "$ref": "#/components/responses/NotFound",
                                                                   },
                                                            "422": {
                                                                       "$ref": "#/components/responses/Unprocessable",
                                                                   },
                                                            "503": {
                                                                       "$ref": "#/components/responses/Unavailable",
                                                                   },
                                                        },
                                       },
                          },
    "/v1/tokens": {
                      "get": {
                                 "operationId": "listTokens",
                                 "summary": "List tokens (admin), never their secrets",
                                 "parameters": [
                                                   {
                                                       "name": "tenant",
                                                       "in": "query",
                                                       "required": False,
                                                       "schema": {"type": "string", "maxLength": 64},
                                                       "description": "Only this tenant's tokens (at most 64 characters; empty: every token).",
                                                   },
                                               ],
                                 "responses": {
                                                  "200": {
                                                             "description": "Tokens.",
                                                             "content": {
                                                                            "application/json": {
                                                                                                    "schema": {
                                                                                                                  "$ref": "#/components/schemas/TokenList",
                                                                                                              },
                                                                                                },
                                                                        },
                                                         },
                                                  "401": {
                                                             "$ref": "#/components/responses/Unauthorized",
                                                         },
                                                  "403": {
                                                             "$ref": "#/components/responses/Forbidden",
                                                         },
                                                  "503": {
                                                             "$ref": "#/components/responses/Unavailable",
                                                         },
                                                  "400": {
                                                             "$ref": "#/components/responses/BadRequest",
                                                         },
                                              },
                             },
                      "post": {
                                  "operationId": "createToken",
                                  "summary": "Create a token (admin); the secret is in this answer only",
                                  "requestBody": {
                                                     "required": True,
                                                     "content": {
                                                                    "application/json": {
                                                                                            "schema": {
                                                                                                          "$ref": "#/components/schemas/TokenRequest",
                                                                                                      },
                                                                                        },
                                                                },
                                                 },
                                  "responses": {
                                                   "201": {
                                                              "description": "Created.",
                                                              "content": {
                                                                             "application/json": {
                                                                                                     "schema": {
                                                                                                                   "$ref": "#/components/schemas/TokenCreated",
                                                                                                               },
                                                                                                 },
                                                                         },
                                                              "links": {
                                                                           "RevokeToken": {
                                                                                              "operationId": "revokeToken",
                                                                                              "parameters": {
                                                                                                                "tokenId": "$response.body#/tokenId",
                                                                                                            },
                                                                                          },
                                                                       },
                                                          },
                                                   "400": {
                                                              "$ref": "#/components/responses/BadRequest",
                                                          },
                                                   "401": {
                                                              "$ref": "#/components/responses/Unauthorized",
                                                          },
                                                   "403": {
                                                              "$ref": "#/components/responses/Forbidden",
                                                          },
                                                   "404": {
                                                              "$ref": "#/components/responses/NotFound",
                                                          },
                                                   "422": {
                                                              "$ref": "#/components/responses/Unprocessable",
                                                          },
                                                   "503": {
                                                              "$ref": "#/components/responses/Unavailable",
                                                          },
                                               },
                              },
                  },
    "/v1/tokens/{tokenId}": {
                                "parameters": [
                                                  {
                                                      "name": "tokenId",
                                                      "in": "path",
                                                      "required": True,
                                                      "schema": {"type": "string"},
                                                      "description": "A token id, `tk_` + 16 hex digits.",
                                                  },
                                              ],
                                "delete": {
                                              "operationId": "revokeToken",
                                              "summary": "Revoke a token (admin); it stops working at once on this node, within seconds on others",
                                              "responses": {
                                                               "200": {
                                                                          "description": "The revoked token.",
                                                                          "content": {
                                                                                         "application/json": {
                                                                                                                 "schema": {
                                                                                                                               "$ref": "#/components/schemas/Token",
                                                                                                                           },
                                                                                                             },
                                                                                     },
                                                                      },
                                                               "401": {
                                                                          "$ref": "#/components/responses/Unauthorized",
                                                                      },
                                                               "403": {
                                                                          "$ref": "#/components/responses/Forbidden",
                                                                      },
                                                               "404": {
                                                                          "$ref": "#/components/responses/NotFound",
                                                                      },
                                                               "503": {
                                                                          "$ref": "#/components/responses/Unavailable",
                                                                      },
                                                               "409": {
                                                                          "description": "The last active admin token: `reason` is `last_admin_token`. Create another admin token first (or, as the daemon's user on its machine, use the Unix socket: docs/security.md).",
                                                                          "content": {
                                                                                         "application/problem+json": {
                                                                                                                         "schema": {
                                                                                                                                       "$ref": "#/components/schemas/Problem",
                                                                                                                                   },
                                                                                                                     },
                                                                                     },
                                                                      },
                                                           },
                                          },
                            },
    "/": {
             "get": {
                        "operationId": "dashboard",
                        "summary": "The web dashboard (HTML)",
                        "description": "A page with no data of its own, served without credentials; its script calls this API with the user's bearer token (asked for on the first 401, kept in the tab's sessionStorage), or with none over the local Unix socket. Served with a strict Content-Security-Policy (same-origin scripts and styles only, no inline script, no framing) and X-Content-Type-Options: nosniff.",
                        "responses": {
                                         "200": {
                                                    "description": "The page.",
                                                    "content": {
                                                                   "text/html": {
                                                                                    "schema": {
                                                                                                  "type": "string",
                                                                                              },
                                                                                },
                                                               },
                                                },
                                     },
                        "security": [],
                    },
         },
    "/ui/{asset}": {
                       "parameters": [
                                         {
                                             "name": "asset",
                                             "in": "path",
                                             "required": True,
                                             "schema": {
                                                           "type": "string",
                                                           "pattern": "^[A-Za-z0-9_-]+\\.(js|css|svg)$",
                                                       },
                                             "description": "A file of the dashboard (app.js, style.css, …).",
                                         },
                                     ],
                       "get": {
                                  "operationId": "dashboardAsset",
                                  "summary": "A script, stylesheet or icon of the web dashboard",
                                  "description": "Static files shipped in the package, served without credentials with the same security headers as the page, an ETag and Cache-Control: no-cache.",
                                  "responses": {
                                                   "200": {
                                                              "description": "The file.",
                                                              "content": {
                                                                             "text/javascript": {
                                                                                                    "schema": {
                                                                                                                  "type": "string",
                                                                                                              },
                                                                                                },
                                                                             "text/css": {
                                                                                             "schema": {
                                                                                                           "type": "string",
                                                                                                       },
                                                                                         },
                                                                             "image/svg+xml": {
                                                                                                  "schema": {
                                                                                                                "type": "string",
                                                                                                            },
                                                                                              },
                                                                         },
                                                          },
                                                   "304": {
                                                              "description": "Not modified (If-None-Match matched the ETag).",
                                                          },
                                                   "404": {
                                                              "$ref": "#/components/responses/NotFound",
                                                          },
                                               },
                                  "security": [],
                              },
                   },
    "/v1/executions/{executionId}/output": {
                                               "parameters": [
                                                                 {
                                                                     "name": "executionId",
                                                                     "in": "path",
                                                                     "required": True,
                                                                     "schema": {"type": "string"},
                                                                     "description": "An execution id, `{jobId}:{scheduledAtMs}`.",
                                                                 },
                                                             ],
                                               "get": {
                                                          "operationId": "getExecutionOutput",
                                                          "summary": "An execution's output, live while it runs",
                                                          "description": "Plain text. While the execution runs on this node's workers: what it printed so far (a bounded tail, up to 64 KiB), and with `follow=1` each new chunk as the worker forwards it, until this attempt ends (then the response ends). Workers forward a command's stdout/stderr as it is produced, bounded per execution (at most 32 KiB/s after a 64 KiB burst, in chunks of at most 16 KiB, at most ten a second); when a command prints faster, the oldest waiting bytes are skipped and a line `[cronwheel: N bytes of output not shown live]` stands in their place (the stored output, the result's tail, is complete). Otherwise the stored output (the tail its last attempt ended with; empty before it ran); `follow=1` on an execution that has not started yet waits for it. In a cluster, output is live on the node whose workers run the execution; another node answers with the stored output once it ends.",
                                                          "parameters": [
                                                                            {
                                                                                "name": "follow",
                                                                                "in": "query",
                                                                                "schema": {
                                                                                              "type": "string",
                                                                                              "enum": [
                                                                                                          "0",
                                                                                                          "1",
                                                                                                          "true",
                                                                                                          "false",
                                                                                                          "yes",
                                                                                                          "no",
                                                                                                      ],
                                                                                          },
                                                                                "description": "Keep the response open and stream the output as it comes, until this attempt ends.",
                                                                            },
                                                                        ],
                                                          "responses": {
                                                                           "200": {
                                                                                      "description": "The output, as UTF-8 text (invalid bytes replaced).",
                                                                                      "content": {
                                                                                                     "text/plain": {
                                                                                                                       "schema": {
                                                                                                                                     "type": "string",
                                                                                                                                 },
                                                                                                                   },
                                                                                                 },
                                                                                  },
                                                                           "400": {
                                                                                      "$ref": "#/components/responses/BadRequest",
                                                                                  },
                                                                           "404": {
                                                                                      "$ref": "#/components/responses/NotFound",
                                                                                  },
                                                                           "503": {
                                                                                      "$ref": "#/components/responses/Unavailable",
                                                                                  },
                                                                           "401": {
                                                                                      "$ref": "#/components/responses/Unauthorized",
                                                                                  },
                                                                           "403": {
                                                                                      "$ref": "#/components/responses/Forbidden",
                                                                                  },
                                                                       },
                                                      },
                                           },
    "/v1/jobs/{jobId}/ping": {
                                 "parameters": [
                                                   {
                                                       "name": "jobId",
                                                       "in": "path",
                                                       "required": True,
                                                       "schema": {"type": "string"},
                                                       "description": "A job id (`j…`).",
                                                   },
                                               ],
                                 "post": {
                                             "operationId": "pingJob",
                                             "summary": "A run elsewhere reports on a job: start, success (the default) or fail",
                                             "description": "`jobId` may also be the job's unique name. A success or fail is recorded as a finished execution (history), moves the dead-man's window (success) and is told to the job's rules like any run. Worker, tenant and admin tokens may ping.",
                                             "requestBody": {
                                                                "required": False,
                                                                "content": {
                                                                               "application/json": {
                                                                                                       "schema": {
                                                                                                                     "$ref": "#/components/schemas/PingRequest",
                                                                                                                 },
                                                                                                   },
                                                                           },
                                                            },
                                             "responses": {
                                                              "200": {
                                                                         "description": "The ping as recorded.",
                                                                         "content": {
                                                                                        "application/json": {
                                                                                                                "schema": {
                                                                                                                              "$ref": "#/components/schemas/PingResponse",
                                                                                                                          },
                                                                                                            },
                                                                                    },
                                                                     },
                                                              "400": {
                                                                         "$ref": "#/components/responses/BadRequest",
                                                                     },
                                                              "404": {
                                                                         "$ref": "#/components/responses/NotFound",
                                                                     },
                                                              "409": {
                                                                         "$ref": "#/components/responses/Conflict",
                                                                     },
                                                              "422": {
                                                                         "$ref": "#/components/responses/Unprocessable",
                                                                     },
                                                              "401": {
                                                                         "$ref": "#/components/responses/Unauthorized",
                                                                     },
                                                              "403": {
                                                                         "$ref": "#/components/responses/Forbidden",
                                                                     },
                                                              "503": {
                                                                         "$ref": "#/components/responses/Unavailable",
                                                                     },
                                                          },
                                         },
                             },
    "/v1/notifications": {
                             "get": {
                                        "operationId": "listNotifications",
                                        "summary": "Notifications, newest first (status=DEAD: their dead-letter queue)",
                                        "parameters": [
                                                          {
                                                              "name": "jobId",
                                                              "in": "query",
                                                              "schema": {
                                                                            "type": "string",
                                                                            "maxLength": 200,
                                                                        },
                                                          },
                                                          {
                                                              "name": "status",
                                                              "in": "query",
                                                              "schema": {
                                                                            "type": "string",
                                                                            "enum": [
                                                                                        "PENDING",
                                                                                        "RUNNING",
                                                                                        "SENT",
                                                                                        "DEAD",
                                                                                        "HELD",
                                                                                    ],
                                                                        },
                                                          },
                                                          {
                                                              "name": "limit",
                                                              "in": "query",
                                                              "schema": {
                                                                            "type": "integer",
                                                                            "minimum": 1,
                                                                            "maximum": 1000,
                                                                            "default": 100,
                                                                        },
                                                          },
                                                          {
                                                              "name": "before",
                                                              "in": "query",
                                                              "schema": {
                                                                            "type": "string",
                                                                            "pattern": "^[0-9]{1,18}[|].{1,500}$",
                                                                        },
                                                              "description": "The `next` of the previous page.",
                                                          },
                                                      ],
                                        "responses": {
                                                         "200": {
                                                                    "description": "A page of notifications.",
                                                                    "content": {
                                                                                   "application/json": {
                                                                                                           "schema": {
                                                                                                                         "$ref": "#/components/schemas/NotificationPage",
                                                                                                                     },
                                                                                                       },
                                                                               },
                                                                },
                                                         "400": {
                                                                    "$ref": "#/components/responses/BadRequest",
                                                                },
                                                         "401": {
                                                                    "$ref": "#/components/responses/Unauthorized",
                                                                },
                                                         "403": {
                                                                    "$ref": "#/components/responses/Forbidden",
                                                                },
                                                         "503": {
                                                                    "$ref": "#/components/responses/Unavailable",
                                                                },
                                                     },
                                    },
                         },
    "/v1/notifications/{notificationId}": {
                                              "parameters": [
                                                                {
                                                                    "name": "notificationId",
                                                                    "in": "path",
                                                                    "required": True,
                                                                    "schema": {"type": "string"},
                                                                    "description": "A notification id, `{subject}@{ruleId}`.",
                                                                },
                                                            ],
                                              "delete": {
                                                            "operationId": "purgeNotification",
                                                            "summary": "Delete a dead-lettered notification for good",
                                                            "description": "Only a DEAD notification (the notifications' dead-letter queue) can be purged; 404 otherwise.",
                                                            "responses": {
                                                                             "200": {
                                                                                        "description": "Purged.",
                                                                                        "content": {
                                                                                                       "application/json": {
                                                                                                                               "schema": {
                                                                                                                                             "$ref": "#/components/schemas/NotificationPurged",
                                                                                                                                         },
                                                                                                                           },
                                                                                                   },
                                                                                    },
                                                                             "404": {
                                                                                        "$ref": "#/components/responses/NotFound",
                                                                                    },
                                                                             "503": {
                                                                                        "$ref": "#/components/responses/Unavailable",
                                                                                    },
                                                                             "401": {
                                                                                        "$ref": "#/components/responses/Unauthorized",
                                                                                    },
                                                                             "403": {
                                                                                        "$ref": "#/components/responses/Forbidden",
                                                                                    },
                                                                         },
                                                        },
                                          },
    "/v1/notifications/{notificationId}/replay": {
                                                     "parameters": [
                                                                       {
                                                                           "name": "notificationId",
                                                                           "in": "path",
                                                                           "required": True,
                                                                           "schema": {
                                                                                         "type": "string",
                                                                                     },
                                                                           "description": "A notification id, `{subject}@{ruleId}`.",
                                                                       },
                                                                   ],
                                                     "post": {
                                                                 "operationId": "replayNotification",
                                                                 "summary": "Send a dead-lettered or held-back notification again (attempts from zero)",
                                                                 "responses": {
                                                                                  "200": {
                                                                                             "description": "The PENDING notification.",
                                                                                             "content": {
                                                                                                            "application/json": {
                                                                                                                                    "schema": {
                                                                                                                                                  "$ref": "#/components/schemas/Notification",
                                                                                                                                              },
                                                                                                                                },
                                                                                                        },
                                                                                         },
                                                                                  "404": {
                                                                                             "$ref": "#/components/responses/NotFound",
                                                                                         },
                                                                                  "401": {
                                                                                             "$ref": "#/components/responses/Unauthorized",
                                                                                         },
                                                                                  "403": {
                                                                                             "$ref": "#/components/responses/Forbidden",
                                                                                         },
                                                                                  "503": {
                                                                                             "$ref": "#/components/responses/Unavailable",
                                                                                         },
                                                                              },
                                                             },
                                                 },
    "/v1/tenants/{name}/notify": {
                                     "parameters": [
                                                       {
                                                           "name": "name",
                                                           "in": "path",
                                                           "required": True,
                                                           "schema": {"type": "string"},
                                                           "description": "A tenant name.",
                                                       },
                                                   ],
                                     "get": {
                                                "operationId": "getTenantNotify",
                                                "summary": "A tenant's default notification rules (for its jobs with none of their own; admin)",
                                                "responses": {
                                                                 "200": {
                                                                            "description": "The default rules.",
                                                                            "content": {
                                                                                           "application/json": {
                                                                                                                   "schema": {
                                                                                                                                 "$ref": "#/components/schemas/TenantNotifyAnswer",
                                                                                                                             },
                                                                                                               },
                                                                                       },
                                                                        },
                                                                 "404": {
                                                                            "$ref": "#/components/responses/NotFound",
                                                                        },
                                                                 "401": {
                                                                            "$ref": "#/components/responses/Unauthorized",
                                                                        },
                                                                 "403": {
                                                                            "$ref": "#/components/responses/Forbidden",
                                                                        },
                                                                 "503": {
                                                                            "$ref": "#/components/responses/Unavailable",
                                                                        },
                                                             },
                                            },
                                     "put": {
                                                "operationId": "setTenantNotify",
                                                "summary": "Replace a tenant's default notification rules (admin)",
                                                "requestBody": {
                                                                   "required": True,
                                                                   "content": {
                                                                                  "application/json": {
                                                                                                          "schema": {
                                                                                                                        "$ref": "#/components/schemas/TenantNotify",
                                                                                                                    },
                                                                                                      },
                                                                              },
                                                               },
                                                "responses": {
                                                                 "200": {
                                                                            "description": "The default rules as saved.",
                                                                            "content": {
                                                                                           "application/json": {
                                                                                                                   "schema": {
                                                                                                                                 "$ref": "#/components/schemas/TenantNotifyAnswer",
                                                                                                                             },
                                                                                                               },
                                                                                       },
                                                                        },
                                                                 "400": {
                                                                            "$ref": "#/components/responses/BadRequest",
                                                                        },
                                                                 "404": {
                                                                            "$ref": "#/components/responses/NotFound",
                                                                        },
                                                                 "422": {
                                                                            "$ref": "#/components/responses/Unprocessable",
                                                                        },
                                                                 "401": {
                                                                            "$ref": "#/components/responses/Unauthorized",
                                                                        },
                                                                 "403": {
                                                                            "$ref": "#/components/responses/Forbidden",
                                                                        },
                                                                 "503": {
                                                                            "$ref": "#/components/responses/Unavailable",
                                                                        },
                                                             },
                                            },
                                 },
}
