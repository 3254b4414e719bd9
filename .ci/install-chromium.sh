#!/usr/bin/env bash
# Install Debian's Chromium (and its driver) for the HTML-report browser tests.
#
# Best effort by design: `make test` calls this and goes on whatever happens, and the browser tests
# skip with a stated reason when /usr/bin/chromium is absent. It never downloads a browser from
# anywhere but the system's package manager (no `playwright install`).
set -u

if [ -x /usr/bin/chromium ]; then
    echo "install-chromium: /usr/bin/chromium already present"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no apt-get (not Debian/Ubuntu); the browser tests will be skipped"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
else
    echo "install-chromium: not root and no non-interactive sudo; install the Debian packages" \
        "'chromium chromium-driver' yourself, else the browser tests will be skipped"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq; then
    echo "install-chromium: apt-get update failed (offline?); the browser tests will be skipped"
    exit 0
fi
if ! $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver; then
    echo "install-chromium: apt-get install chromium chromium-driver failed; the browser tests will be skipped"
    exit 0
fi
echo "install-chromium: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
