#!/usr/bin/env bash
# Installs the real-HTML corpus of the realhtml benchmark: Debian's documentation
# packages (Python 3.11's library docs, the Debian Administrator's Handbook in
# 26 languages, the Debian Reference, the Developer's Reference). Needs root and
# apt-get; otherwise it says why and exits 3 so the bench can skip with a reason.
set -euo pipefail
PKGS="python3.11-doc debian-handbook debian-reference-en developers-reference wget time"
if [ -d /usr/share/doc/python3.11/html ] && [ -d /usr/share/doc/debian-handbook/html ] && [ -x /usr/bin/wget ] && [ -x /usr/bin/time ]; then exit 0; fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "realhtml corpus missing and cannot install it here (needs root and apt-get): apt-get install $PKGS" >&2
  exit 3
fi
echo "installing the real-HTML corpus: $PKGS" >&2
apt-get update -qq
# --no-install-recommends: the handbook recommends calibre and friends; only the HTML is needed.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
