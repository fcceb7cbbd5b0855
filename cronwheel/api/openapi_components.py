"""The components of the OpenAPI document that no struct declares yet: an email address (a
notification rule's ``to``; the rule and its answer are ``core/notify.py``'s structs), the
answers still built as plain JSON (the node's status, herd, activity
and events, an execution's context), the
shared responses and the security schemes. The bodies and answers declared as structs
(``core/jobfields.py``, ``core/backfill.py``, ``api/schema.py``, ``api/answers.py``) are generated from them by
``api/openapi.py``.

Why one module: it is one table of JSON Schemas, each named once and referenced by name.
"""

from __future__ import annotations

from typing import Any

SCHEMAS: dict[str, Any] = {
    "Status": {
                  "type": "object",
                  "description": "Node health: node id, store, uptime, jobs by status, queue depth by tier, running executions, workers, next run, dispatch lag percentiles. The parts read from the store (jobs, executions, nextRunAt, store, cluster) come from the node's last successful read: while the store cannot be reached (a failover, a restart) the node answers 200 with that read, marked stale, rather than 503 (503 only when it has never read the store). The in-memory parts (queue, delayed, wheel, workers, dispatchLagMs, uptimeSec, cluster.owned) are always live.",
                  "properties": {
                                    "stopping": {
                                                    "type": "boolean",
                                                    "description": "true: the node is stopping (SIGTERM, systemctl stop). It starts no new work; its running executions finish within the grace period. What is created meanwhile is stored, and runs after the restart (or on another node of a cluster).",
                                                },
                                    "stale": {
                                                 "type": "boolean",
                                                 "description": "true: the store could not be read for this answer; the store-read parts are as of asOf.",
                                             },
                                    "asOf": {
                                                "type": "string",
                                                "format": "date-time",
                                                "description": "When the store-read parts were read (now, when stale is false).",
                                            },
                                    "staleForMs": {
                                                      "type": "integer",
                                                      "description": "Only when stale: how old the store-read parts are, in milliseconds.",
                                                  },
                                    "storeError": {
                                                      "type": "string",
                                                      "description": "Only when stale: why the store could not be read.",
                                                  },
                                    "tenantStateEntries": {
                                                              "type": "integer",
                                                              "description": "Entries this node holds in memory per tenant (settings, submission rate buckets, turns among the API's reads, cached calendars): it returns to what it was once deleted tenants are gone.",
                                                          },
                                    "disk": {
                                                "type": "object",
                                                "description": "The data directory's file system (live) and the SQLite WAL (as of the last check, every 5 s). low: free space under lowMarkBytes (--disk-low); store.disk_low is logged.",
                                                "properties": {
                                                                  "freeBytes": {
                                                                                   "type": [
                                                                                               "integer",
                                                                                               "null",
                                                                                           ],
                                                                               },
                                                                  "totalBytes": {
                                                                                    "type": [
                                                                                                "integer",
                                                                                                "null",
                                                                                            ],
                                                                                },
                                                                  "low": {"type": "boolean"},
                                                                  "lowMarkBytes": {
                                                                                      "type": "integer",
                                                                                  },
                                                                  "walBytes": {
                                                                                  "type": [
                                                                                              "integer",
                                                                                              "null",
                                                                                          ],
                                                                              },
                                                              },
                                            },
                                    "notifications": {
                                                         "type": "object",
                                                         "description": "Notifications in the store by status (PENDING, RUNNING, SENT, DEAD, HELD) and `overdueJobs`: jobs whose dead-man's window passed without a success.",
                                                         "additionalProperties": {"type": "integer"},
                                                     },
                                },
                  "required": ["stale", "asOf"],
                  "additionalProperties": True,
              },
    "NodeConfig": {
        "type": "object",
        "required": ["pid", "startedAt", "file", "keys"],
        "properties": {
            "pid": {"type": "integer", "description": "The daemon's process id."},
            "node": {"type": ["string", "null"], "description": "Its node id."},
            "startedAt": {"type": "string", "format": "date-time"},
            "reloadedAt": {"type": ["string", "null"], "format": "date-time",
                           "description": "The last SIGHUP that read the configuration file (null: none)."},
            "file": {"type": ["string", "null"], "description": "The configuration file it read (null: none)."},
            "keys": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "value", "source"],
                    "properties": {
                        "key": {"type": "string"},
                        "value": {"type": ["string", "integer", "number", "boolean", "null"]},
                        "source": {"type": "string", "description": "flag, env CRONWHEEL_<KEY>, FILE:LINE or default."},
                        "env": {"type": ["string", "null"], "description": "The key's environment variable."},
                        "default": {"type": ["string", "null"], "description": "The daemon's default, as its help says."},
                    },
                },
            },
        },
    },
    "Herd": {
                "type": "object",
                "description": "Ticks per second of the active jobs over a window (GET /v1/herd).",
                "required": [
                                "windowStart",
                                "windowSec",
                                "jobs",
                                "skipped",
                                "ticks",
                                "maxPerSecond",
                                "p99PerSecond",
                                "busiest",
                                "perMinute",
                            ],
                "properties": {
                                  "windowStart": {"type": "string", "format": "date-time"},
                                  "windowSec": {"type": "integer"},
                                  "tenant": {
                                                "type": ["string", "null"],
                                                "description": "The tenant the preview is scoped to; null: every tenant.",
                                            },
                                  "jobs": {
                                              "type": "integer",
                                              "description": "Active jobs considered.",
                                          },
                                  "skipped": {
                                                 "type": "integer",
                                                 "description": "Jobs whose schedule could not be evaluated.",
                                             },
                                  "ticks": {
                                               "type": "integer",
                                               "description": "Ticks in the window.",
                                           },
                                  "maxPerSecond": {"type": "integer"},
                                  "p99PerSecond": {"type": "integer"},
                                  "busiest": {
                                                 "type": "array",
                                                 "items": {
                                                              "type": "object",
                                                              "required": [
                                                                              "at",
                                                                              "offsetSec",
                                                                              "count",
                                                                              "schedules",
                                                                          ],
                                                              "properties": {
                                                                                "at": {
                                                                                          "type": "string",
                                                                                          "format": "date-time",
                                                                                      },
                                                                                "offsetSec": {
                                                                                                 "type": "integer",
                                                                                             },
                                                                                "count": {
                                                                                             "type": "integer",
                                                                                         },
                                                                                "schedules": {
                                                                                                 "type": "array",
                                                                                                 "description": "The schedules that fill this second, most jobs first (at most 5).",
                                                                                                 "items": {
                                                                                                              "type": "object",
                                                                                                              "required": [
                                                                                                                              "schedule",
                                                                                                                              "jobs",
                                                                                                                          ],
                                                                                                              "properties": {
                                                                                                                                "schedule": {
                                                                                                                                                "type": "string",
                                                                                                                                            },
                                                                                                                                "jobs": {
                                                                                                                                            "type": "integer",
                                                                                                                                        },
                                                                                                                            },
                                                                                                          },
                                                                                             },
                                                                            },
                                                          },
                                             },
                                  "perMinute": {
                                                   "type": "array",
                                                   "items": {"type": "integer"},
                                                   "description": "Ticks in each minute of the window.",
                                               },
                                  "peakPerMinute": {
                                                       "type": "array",
                                                       "items": {"type": "integer"},
                                                       "description": "Ticks due in the busiest second of each minute of the window: the herd, second by second, in one value per minute.",
                                                   },
                              },
                "additionalProperties": True,
            },
    "Event": {
                 "type": "object",
                 "description": "One event of the daemon's log; the fields beyond these four depend on the event.",
                 "required": ["ts", "event", "node", "seq"],
                 "properties": {
                                   "ts": {
                                             "type": "string",
                                             "description": "RFC 3339 UTC with milliseconds.",
                                         },
                                   "event": {
                                                "type": "string",
                                                "description": "Stable name, e.g. execution.started, lease.fenced.",
                                            },
                                   "node": {"type": "string"},
                                   "seq": {
                                              "type": "integer",
                                              "description": "Increases by one per event of this node's event log, which starts again at 1 with each start of the daemon (gaps: filtered or dropped).",
                                          },
                               },
                 "additionalProperties": True,
             },
    "Activity": {
                    "type": "object",
                    "required": ["nodeId", "at", "lagHistory", "running", "runningTotal"],
                    "properties": {
                                      "nodeId": {"type": "string"},
                                      "at": {"type": "string", "format": "date-time"},
                                      "lagHistory": {
                                                        "type": "object",
                                                        "required": ["minuteSec", "minutes"],
                                                        "properties": {
                                                                          "minuteSec": {"const": 60},
                                                                          "minutes": {
                                                                                         "type": "array",
                                                                                         "minItems": 60,
                                                                                         "maxItems": 60,
                                                                                         "items": {
                                                                                                      "type": "object",
                                                                                                      "required": [
                                                                                                                      "at",
                                                                                                                      "count",
                                                                                                                      "p50",
                                                                                                                      "p99",
                                                                                                                      "max",
                                                                                                                  ],
                                                                                                      "properties": {
                                                                                                                        "at": {
                                                                                                                                  "type": "string",
                                                                                                                                  "format": "date-time",
                                                                                                                                  "description": "The minute's start.",
                                                                                                                              },
                                                                                                                        "count": {
                                                                                                                                     "type": "integer",
                                                                                                                                     "minimum": 0,
                                                                                                                                     "description": "First attempts started in this minute.",
                                                                                                                                 },
                                                                                                                        "p50": {
                                                                                                                                   "type": [
                                                                                                                                               "integer",
                                                                                                                                               "null",
                                                                                                                                           ],
                                                                                                                                   "minimum": 0,
                                                                                                                                   "description": "Milliseconds.",
                                                                                                                               },
                                                                                                                        "p99": {
                                                                                                                                   "type": [
                                                                                                                                               "integer",
                                                                                                                                               "null",
                                                                                                                                           ],
                                                                                                                                   "minimum": 0,
                                                                                                                                   "description": "Milliseconds.",
                                                                                                                               },
                                                                                                                        "max": {
                                                                                                                                   "type": [
                                                                                                                                               "integer",
                                                                                                                                               "null",
                                                                                                                                           ],
                                                                                                                                   "minimum": 0,
                                                                                                                                   "description": "Milliseconds (exact).",
                                                                                                                               },
                                                                                                                    },
                                                                                                  },
                                                                                     },
                                                                      },
                                                    },
                                      "running": {
                                                     "type": "array",
                                                     "maxItems": 100,
                                                     "items": {
                                                                  "type": "object",
                                                                  "required": [
                                                                                  "executionId",
                                                                                  "jobId",
                                                                                  "workerId",
                                                                                  "leaseEpoch",
                                                                                  "runningSec",
                                                                              ],
                                                                  "properties": {
                                                                                    "executionId": {
                                                                                                       "type": "string",
                                                                                                   },
                                                                                    "jobId": {
                                                                                                 "type": "string",
                                                                                             },
                                                                                    "workerId": {
                                                                                                    "type": "string",
                                                                                                },
                                                                                    "leaseEpoch": {
                                                                                                      "type": "integer",
                                                                                                      "minimum": 1,
                                                                                                  },
                                                                                    "runningSec": {
                                                                                                      "type": [
                                                                                                                  "number",
                                                                                                                  "null",
                                                                                                              ],
                                                                                                      "minimum": 0,
                                                                                                  },
                                                                                },
                                                              },
                                                 },
                                      "runningTotal": {"type": "integer", "minimum": 0},
                                  },
                },
    "ExecutionContext": {
                            "type": ["object", "null"],
                            "description": "What made the execution when not the job's own schedule: `{\"backfill\": true}`, or `{\"parent\": {executionId, jobId, scheduledAt, outcome}}` for a chain child (outcome SUCCEEDED or DEAD).",
                            "properties": {
                                              "backfill": {"type": "boolean"},
                                              "parent": {
                                                            "type": "object",
                                                            "properties": {
                                                                              "executionId": {
                                                                                                 "type": "string",
                                                                                             },
                                                                              "jobId": {
                                                                                           "type": "string",
                                                                                       },
                                                                              "scheduledAt": {
                                                                                                 "type": "string",
                                                                                                 "format": "date-time",
                                                                                             },
                                                                              "outcome": {
                                                                                             "type": "string",
                                                                                             "enum": [
                                                                                                         "SUCCEEDED",
                                                                                                         "DEAD",
                                                                                                     ],
                                                                                         },
                                                                          },
                                                        },
                                          },
                        },
    "EmailAddress": {
                        "type": "string",
                        "maxLength": 320,
                        "pattern": "^(?![^@]*(?:=\\?|[%!]))[^@\\s<>,;:\"\\u0000-\\u001f\\u007f-\\u009f\\ufeff]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,253}[A-Za-z0-9])?(?!\\n)$",
                    },
}

RESPONSES: dict[str, Any] = {
    "BadRequest": {
                      "description": "Malformed JSON, an invalid schedule, timezone, header or query parameter.",
                      "content": {
                                     "application/problem+json": {
                                                                     "schema": {
                                                                                   "$ref": "#/components/schemas/Problem",
                                                                               },
                                                                 },
                                 },
                  },
    "NotFound": {
                    "description": "No such object (or another tenant's).",
                    "content": {
                                   "application/problem+json": {
                                                                   "schema": {
                                                                                 "$ref": "#/components/schemas/Problem",
                                                                             },
                                                               },
                               },
                },
    "PayloadTooLarge": {
                           "description": "Body over 1 MiB, or payload over 64 KiB.",
                           "content": {
                                          "application/problem+json": {
                                                                          "schema": {
                                                                                        "$ref": "#/components/schemas/Problem",
                                                                                    },
                                                                      },
                                      },
                       },
    "UnsupportedMediaType": {
                                "description": "The body is not application/json.",
                                "content": {
                                               "application/problem+json": {
                                                                               "schema": {
                                                                                             "$ref": "#/components/schemas/Problem",
                                                                                         },
                                                                           },
                                           },
                            },
    "Unprocessable": {
                         "description": "A member is missing, unknown, of the wrong type or out of range; `field` names it.",
                         "content": {
                                        "application/problem+json": {
                                                                        "schema": {
                                                                                      "$ref": "#/components/schemas/Problem",
                                                                                  },
                                                                    },
                                    },
                     },
    "Conflict": {
                    "description": "The object is not in a state that allows this.",
                    "content": {
                                   "application/problem+json": {
                                                                   "schema": {
                                                                                 "$ref": "#/components/schemas/Problem",
                                                                             },
                                                               },
                               },
                },
    "LeaseConflict": {
                         "description": "Stale lease: code `lease_conflict`, `reason` `lease_lost` or `cancelled`; or not this worker's lease: code and `reason` `wrong_worker` (the current leaseEpoch was granted to another workerId). The worker must abort the run at once.",
                         "content": {
                                        "application/problem+json": {
                                                                        "schema": {
                                                                                      "$ref": "#/components/schemas/Problem",
                                                                                  },
                                                                    },
                                    },
                     },
    "Unavailable": {
                       "description": "The store is unreachable (e.g. failing over); retry.",
                       "content": {
                                      "application/problem+json": {
                                                                      "schema": {
                                                                                    "$ref": "#/components/schemas/Problem",
                                                                                },
                                                                  },
                                  },
                   },
    "Unauthorized": {
                        "description": "No bearer token, or one nobody issued (or since revoked). Carries `WWW-Authenticate: Bearer`.",
                        "headers": {
                                       "WWW-Authenticate": {
                                                               "schema": {"type": "string"},
                                                               "description": "`Bearer realm=\"cronwheel\"`, with `error=\"invalid_token\"` for a bad token.",
                                                           },
                                   },
                        "content": {
                                       "application/problem+json": {
                                                                       "schema": {
                                                                                     "$ref": "#/components/schemas/Problem",
                                                                                 },
                                                                   },
                                   },
                    },
    "Forbidden": {
                     "description": "The token's role may not do this (a worker token managing jobs, a tenant token on an admin route, a tenant without `allowShell` creating a command or python target, a tenant without `allowHighPriority` giving a job priority high, an HTTP target outside the allow-list).",
                     "content": {
                                    "application/problem+json": {
                                                                    "schema": {
                                                                                  "$ref": "#/components/schemas/Problem",
                                                                              },
                                                                },
                                },
                 },
    "TooManyRequests": {
                           "description": "A tenant quota: submissions per second (with `Retry-After`) or registered jobs (`quota` says which).",
                           "headers": {
                                          "Retry-After": {
                                                             "schema": {"type": "integer"},
                                                             "description": "Seconds to wait before submitting again (submission rate only).",
                                                         },
                                      },
                           "content": {
                                          "application/problem+json": {
                                                                          "schema": {
                                                                                        "$ref": "#/components/schemas/Problem",
                                                                                    },
                                                                      },
                                      },
                       },
    "NameTaken": {
                     "description": "Another live job (any status but CANCELLED) of the tenant has this name: names are unique per tenant. `code` is `name_taken` and `jobId` names the job that holds it (change that one in place with `PATCH /v1/jobs/{jobId}`, or cancel it first).",
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
                                                                                                                                  "description": "The job that holds the name.",
                                                                                                                              },
                                                                                                                 },
                                                                                               },
                                                                                           ],
                                                                              },
                                                                },
                                },
                 },
}

SECURITY_SCHEMES: dict[str, Any] = {
    "bearerAuth": {
                      "type": "http",
                      "scheme": "bearer",
                      "description": "A token from `cronwheel token create` (or `<data-dir>/admin-token`). Shown once, stored only as a hash.",
                  },
}
