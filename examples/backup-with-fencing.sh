#!/bin/sh
# A nightly backup whose upload happens effectively once, fenced by cronwheel.
#
# Add it (H hashes the job id to a stable minute of 02:xx, so a fleet of these jobs does not
# all start at 02:00:00):
#
#   cronwheel add --name nightly-backup 'H 2 * * *' -- examples/backup-with-fencing.sh SRC DEST
#
# SRC is a file or directory to archive, DEST the directory to upload into (a local path
# here; swap `publish` for `aws s3 cp`, `rsync`, ... to upload elsewhere).
#
# Why fencing: cronwheel runs each tick at least once. If a worker pauses past its lease (a
# long GC, SIGSTOP, a partition), another worker takes the same execution with a higher
# CRONWHEEL_LEASE_EPOCH, and the paused one may wake up and carry on. `cronwheel effect KEY`
# records KEY for this execution, checked against the current lease epoch:
#
#   exit 0  recorded now: we own the effect, upload
#   exit 3  duplicate: an earlier attempt of this execution recorded it already
#   exit 4  fenced: our lease is stale, a newer attempt owns this run: stop at once
#
# The archive is built and staged under a per-attempt name first (safe to redo), then the
# effect is recorded, then the staged copy is renamed into place (atomic). A duplicate whose
# upload is already in place does nothing; one whose earlier attempt died between recording
# and renaming finishes the rename with its own staged copy.
#
# cronwheel gives the job CRONWHEEL_URL, CRONWHEEL_EXECUTION_ID, CRONWHEEL_LEASE_EPOCH,
# CRONWHEEL_SCHEDULED_AT and CRONWHEEL_CLI (the daemon's own `cronwheel`, whose directory is
# also on the job's PATH). To rerun an execution by hand, set them yourself (and
# CRONWHEEL_TOKEN when CRONWHEEL_URL is the TCP API); without CRONWHEEL_CLI, the `cronwheel`
# on your PATH is used.
set -eu

if [ $# -ne 2 ]; then
    echo "usage: $0 SRC DEST" >&2
    exit 2
fi
src=$1
dest=$2
cli=${CRONWHEEL_CLI:-cronwheel}
: "${CRONWHEEL_EXECUTION_ID:?run this from cronwheel (CRONWHEEL_EXECUTION_ID is not set)}"
: "${CRONWHEEL_LEASE_EPOCH:?run this from cronwheel (CRONWHEEL_LEASE_EPOCH is not set)}"

# one archive name per tick: 2026-11-30T02:17:00.000Z -> 20261130T021700Z
stamp=$(printf '%s' "${CRONWHEEL_SCHEDULED_AT:-$CRONWHEEL_EXECUTION_ID}" | sed 's/\.[0-9]*Z$/Z/; s/[^0-9A-Za-z]//g')
name="backup-$stamp.tar.gz"
final="$dest/$name"
staged="$dest/.$name.epoch$CRONWHEEL_LEASE_EPOCH.partial"

mkdir -p "$dest"
trap 'rm -f "$staged"' EXIT

# 1. build and stage: harmless to repeat, nobody reads .partial files
tar -czf "$staged" -C "$(dirname "$src")" "$(basename "$src")"

# 2. the fence: may this attempt publish?
set +e
$cli effect "upload:$name"
rc=$?
set -e
case $rc in
    0) ;;
    3)
        if [ -e "$final" ]; then
            echo "backup: $name was uploaded by an earlier attempt; not uploading it again"
            exit 0
        fi
        echo "backup: an earlier attempt recorded $name but did not finish; finishing it" ;;
    4)
        echo "backup: fenced: a newer attempt owns this run; stopping" >&2
        exit 4 ;;
    *)
        echo "backup: could not record the upload (cronwheel effect exited $rc)" >&2
        exit "$rc" ;;
esac

# 3. publish: one atomic rename
mv -f "$staged" "$final"
echo "backup: uploaded $final"
