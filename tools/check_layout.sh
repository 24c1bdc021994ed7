#!/usr/bin/env bash
# Checks the house's floors (docs/development.md, "Layout"):
#   - libdtrain includes no CAF and nothing of actors/, dashboard/ or apps/;
#   - the cluster side (actors/cluster) includes nothing of the driver side,
#     the process roles or the dashboard, and its library does not link them
#     (the link graph: readelf's NEEDED entries);
#   - the driver side includes nothing of the process roles.
# Usage: tools/check_layout.sh [BUILD_DIR]   (the link check needs a build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
fail=0
refuse() {  # refuse DESCRIPTION FOLDER REGEX
  local hits
  hits=$(grep -rnE "#\s*include\s+[<\"]($3)" "$root/$2" --include='*.hpp' --include='*.cpp' \
           --include='*.cu' --include='*.h' || true)
  if [[ -n "$hits" ]]; then
    echo "layout: $1:"; echo "$hits" | sed "s#$root/##"; fail=1
  fi
}
refuse "libdtrain includes CAF or an upper floor" libdtrain 'caf/|dtrain/(cluster|driver|roles|dashboard)/'
refuse "the cluster side includes the driver side, the roles or the dashboard" actors/cluster \
  'dtrain/(driver|roles|dashboard)/'
if [[ -d "$root/actors/driver" ]]; then
  refuse "the driver side includes the process roles" actors/driver 'dtrain/roles/'
fi
lib="$build/lib/libdtrain_cluster.so"
if [[ -f "$lib" ]]; then
  needed=$(readelf -d "$lib" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')
  if grep -qE 'libdtrain_(driver|roles|dashboard)' <<<"$needed"; then
    echo "layout: libdtrain_cluster links an upper floor:"; echo "$needed"; fail=1
  fi
  echo "libdtrain_cluster needs: $(grep dtrain <<<"$needed" | tr '\n' ' ')"
else
  echo "layout: no $lib (build first) - link graph not checked"; fail=1
fi
for l in driver roles dashboard; do
  f="$build/lib/libdtrain_$l.so"
  [[ -f "$f" ]] && echo "libdtrain_$l needs: $(readelf -d "$f" | sed -n 's/.*NEEDED.*\[\(libdtrain.*\)\]/\1/p' | tr '\n' ' ')"
done
if [[ $fail -eq 0 ]]; then echo "layout: ok"; fi
exit $fail
