"""The exit codes of ``cronwheel`` beyond 0 (ok), 1 (refused or not found) and 2 (usage), in
one table: the commands exit with them and man/cronwheel.1's EXIT STATUS lists them."""

from __future__ import annotations

#: no daemon reachable (sysexits' EX_UNAVAILABLE)
EX_UNAVAILABLE = 69
#: ``cronwheel effect``: an earlier attempt recorded the effect already
EX_DUPLICATE = 3
#: ``cronwheel effect``: this attempt's lease is stale (another worker took over)
EX_FENCED = 4
#: ``cronwheel run --wait --timeout``: the execution had not ended in time (as timeout(1))
EX_WAIT_TIMEOUT = 124
#: the output's reader went away (``cronwheel ls | head -1``): what a shell reports for a
#: program killed by SIGPIPE (128 + 13), as git's and coreutils' do, not 1 (refused)
EX_PIPE_CLOSED = 141
