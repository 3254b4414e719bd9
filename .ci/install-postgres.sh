#!/usr/bin/env bash
# Install Debian's PostgreSQL server binaries (initdb, pg_ctl) for the review app's database test.
#
# Best effort by design: `make test` calls this and goes on whatever happens; the PostgreSQL test
# starts a throwaway cluster in a temporary folder and skips with a stated reason when the binaries
# are absent. It never starts a system service.
set -u

if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "install-postgres: initdb already present"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-postgres: no apt-get (not Debian/Ubuntu); the PostgreSQL test will be skipped"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
else
    echo "install-postgres: not root and no non-interactive sudo; install the Debian package" \
        "'postgresql' yourself, else the PostgreSQL test will be skipped"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq; then
    echo "install-postgres: apt-get update failed (offline?); the PostgreSQL test will be skipped"
    exit 0
fi
if ! $SUDO apt-get install -y -qq --no-install-recommends postgresql; then
    echo "install-postgres: apt-get install postgresql failed; the PostgreSQL test will be skipped"
    exit 0
fi
# Debian starts a cluster as a service on install; the test needs none of it.
$SUDO pg_ctlcluster --help >/dev/null 2>&1 && $SUDO service postgresql stop >/dev/null 2>&1
echo "install-postgres: installed $(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | head -1)"
exit 0
