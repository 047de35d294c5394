#!/usr/bin/env bash
# Builds the Baton .deb (tools, systemd units, /etc/baton examples, docs; docs/DEPLOY.md) with
# CPack in build-deb/, prefix /usr; its dependencies are computed by dpkg-shlibdeps from Debian's
# runtime packages. Prints the package's path and its control fields.
#   scripts/build-deb.sh            then: sudo apt install ./build-deb/baton_*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup-deps.sh
jobs=${BATON_JOBS:-$(nproc)}
cmake -S . -B build-deb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DBATON_BUILD_TESTS=OFF >/dev/null
cmake --build build-deb -j "$jobs" --target engine-worker engine-coordinator engine-run engine-bench engine-ctl engine-gguf
(cd build-deb && cpack -G DEB >/dev/null)
deb=$(ls -t build-deb/baton_*.deb | head -1)
echo "$deb"
dpkg-deb --field "$deb" Package Version Depends Recommends
