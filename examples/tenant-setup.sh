#!/bin/sh
# Set up a tenant over the HTTP API: create it with a fair-queuing weight and quotas, issue
# it a token, submit a job with that token, and list the jobs as that tenant.
#
#   CRONWHEEL_URL=http://127.0.0.1:7878 CRONWHEEL_ADMIN_TOKEN=$(cat .cronwheel/admin-token) \
#       examples/tenant-setup.sh [TENANT]
#
# TENANT defaults to "acme". Needs curl and python3 (to read JSON; jq works as well).
# The tenant token is printed once on stderr: keep it, the daemon only stores its hash.
# The same with the CLI: `cronwheel tenant add ...`, `cronwheel token create --tenant ...`.
set -eu

url=${CRONWHEEL_URL:-http://127.0.0.1:7878}
admin=${CRONWHEEL_ADMIN_TOKEN:?set CRONWHEEL_ADMIN_TOKEN (the daemon writes one to <data-dir>/admin-token)}
tenant=${1:-acme}

# api METHOD PATH TOKEN [JSON]: the response body on stdout; fails on an HTTP error
api() {
    if [ $# -ge 4 ]; then
        curl -sS --fail-with-body -X "$1" "$url$2" -H "Authorization: Bearer $3" \
            -H 'Content-Type: application/json' -d "$4"
    else
        curl -sS --fail-with-body -X "$1" "$url$2" -H "Authorization: Bearer $3"
    fi
}

# field NAME: one field of the JSON object on stdin
field() {
    python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

# 1. the tenant: weight 2 (twice the share of a weight-1 tenant when both have work queued),
#    at most 4 runs at once, at most 1000 jobs, 10 submissions/s (bursts of 50), and HTTP
#    and queue targets only (allowShell false: no shell commands on the workers)
#    Run again, the script brings an existing tenant to these settings (PATCH) instead.
settings='"weight": 2, "maxRunning": 4, "maxJobs": 1000, "submitRate": 10, "submitBurst": 50, "allowShell": false'
if api PATCH "/v1/tenants/$tenant" "$admin" "{$settings}" >/dev/null 2>&1; then
    echo "tenant $tenant updated" >&2
else
    api POST /v1/tenants "$admin" "{\"name\": \"$tenant\", $settings}" >/dev/null
    echo "tenant $tenant created" >&2
fi

# 2. a token for it
token=$(api POST /v1/tokens "$admin" "{\"tenant\": \"$tenant\", \"role\": \"tenant\", \"name\": \"setup\"}" | field token)
echo "tenant token (shown once): $token" >&2

# 3. a job, submitted as the tenant (the Idempotency-Key makes a retried submission safe)
job=$(curl -sS --fail-with-body "$url/v1/jobs" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -H "Idempotency-Key: $tenant-setup-report" \
    -d '{"name": "report", "schedule": "H 6 * * *",
         "http": {"url": "https://hooks.example.com/report", "method": "POST"},
         "payload": {"kind": "daily"}}' | field jobId)
echo "job $job submitted" >&2

# 4. its jobs, as the tenant sees them (only its own)
api GET /v1/jobs "$token"
echo
echo "$job"
