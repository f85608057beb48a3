#!/usr/bin/env bash
# The dashboard and render tests drive Debian's Chromium through playwright-core. Install it
# when it is missing and we may (root with apt-get, as on CI); otherwise say so
# and let those tests skip with their own messages. Never fails the test run.
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian chromium for the dashboard and render tests (apt-get)..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "could not install chromium: the dashboard and render tests will skip" >&2
else
  echo "chromium is not installed (apt-get install chromium): the dashboard and render tests will skip" >&2
fi
exit 0
