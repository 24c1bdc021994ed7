#!/bin/bash
# dtrain as a package, checked from the outside: installs this build into a
# temporary prefix and uses it as a user would, with nothing from the
# source or build tree.
#
#   install_test.sh BUILD_DIR SOURCE_DIR VERSION
#
#  1. the installed tree: headers, versioned libraries, bin/dtrain only
#     (no tests or benchmarks), the CMake package, dtrain.pc; no installed
#     header includes a private dependency (Gloo, OpenBLAS, yaml-cpp,
#     SQLite, Cap'n Proto, CUDA, NCCL, OpenSSL);
#  2. bin/dtrain runs from the prefix (its rpath finds the prefix's
#     libdtrain_core) and prints VERSION;
#  3. pkg-config knows VERSION, a program built with only its flags links
#     and runs, and all installed headers compile together with its flags;
#  4. examples/custom-operator, copied out of the tree, configures and
#     builds with find_package(dtrain) and -DCMAKE_PREFIX_PATH=<prefix>,
#     its compile commands naming neither the source nor the build tree;
#  5. its driver trains the plugin's operator for one epoch with two
#     replicas, which end with equal parameter hashes: on an embedded
#     cluster, then (two epochs, equal hashes after each) on the installed
#     dtrain's head and two one-slot nodes on loopback over mutual TLS with
#     certificates made by the installed `dtrain cert`; both nodes receive
#     the plugin from the driver;
#  6. the prefix moved elsewhere still works (rpath, pkg-config paths).
set -euo pipefail

build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
version=$3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-install-test.XXXXXX")
prefix=$tmp/prefix
export DTRAIN_HOME=$tmp/home   # pid files, logs, plugins: this test's own
unset DTRAIN_ADDRESS
cleanup() {
  # The cluster of step 5, if a failure left it running (`dtrain stop`
  # stops only what DTRAIN_HOME records).
  if [ -x "$prefix/bin/dtrain" ]; then "$prefix/bin/dtrain" stop > /dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "-- $*"; }

step "cmake --install $build --prefix <tmp>/prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install failed"; }

# ---- 1. the installed tree ----------------------------------------------------
libdir=lib
[ -d "$prefix/lib" ] || fail "no lib/ under the prefix: $(ls "$prefix")"
for f in include/dtrain/config.hpp include/dtrain/plugin/plugin.hpp \
         include/dtrain/train/operator.hpp include/dtrain/actors/trainer.hpp \
         include/dtrain/serialization/capnp_checkpoint.hpp \
         $libdir/libdtrain_core.so.$version $libdir/libdtrain_serialization.so.$version \
         $libdir/libdtrain_actors.so.$version $libdir/libdtrain_dashboard.so.$version \
         include/dtrain/dashboard/dashboard.hpp share/dtrain/web/index.html \
         share/dtrain/web/vendor/uPlot.iife.min.js \
         $libdir/cmake/dtrain/dtrainConfig.cmake $libdir/cmake/dtrain/dtrainConfigVersion.cmake \
         $libdir/cmake/dtrain/dtrainTargets.cmake $libdir/cmake/dtrain/FindCAF.cmake \
         $libdir/pkgconfig/dtrain.pc bin/dtrain; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
for lib in core serialization actors dashboard; do
  [ "$(readlink "$prefix/$libdir/libdtrain_$lib.so")" = "libdtrain_$lib.so.$version" ] ||
    fail "libdtrain_$lib.so does not link to libdtrain_$lib.so.$version"
done
programs=$(ls "$prefix/bin")
[ "$programs" = "dtrain" ] || fail "bin/ should hold only dtrain, holds: $programs"
grep -q "#define DTRAIN_VERSION \"$version\"" "$prefix/include/dtrain/config.hpp" ||
  fail "the installed config.hpp does not say version $version"

leaks=$(grep -rlE '#include *[<"](yaml-cpp/|sqlite3\.h|kj/|capnp/|gloo/|cblas|cuda|cublas|nccl\.h|openssl/)' \
          "$prefix/include" || true)
[ -z "$leaks" ] || fail "installed headers include private dependencies: $leaks"

# ---- 2. bin/dtrain from the prefix ----------------------------------------------
step "bin/dtrain --version"
out=$(env -u LD_LIBRARY_PATH "$prefix/bin/dtrain" --version)
[ "$out" = "dtrain $version" ] || fail "dtrain --version printed '$out', not 'dtrain $version'"
core=$(env -u LD_LIBRARY_PATH ldd "$prefix/bin/dtrain" | awk '/libdtrain_core/ {print $3}')
case "$core" in
  "$prefix"/*) ;;
  *) fail "the installed dtrain loads libdtrain_core from '$core', not from the prefix" ;;
esac

# ---- 3. pkg-config --------------------------------------------------------------
step "pkg-config"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
out=$(pkg-config --modversion dtrain)
[ "$out" = "$version" ] || fail "pkg-config --modversion dtrain: '$out', not '$version'"
# shellcheck disable=SC2046
c++ -std=c++17 "$source/tests/install/pkg_consumer.cpp" -o "$tmp/pkg_consumer" \
  $(pkg-config --cflags --libs dtrain) || fail "a program built with pkg-config's flags"
out=$(LD_LIBRARY_PATH=$prefix/$libdir "$tmp/pkg_consumer") ||
  fail "the pkg-config program failed: $out"
echo "$out"

step "every installed header, compiled together with pkg-config's flags"
(cd "$prefix/include" && find dtrain -name '*.hpp' | sort | sed 's/.*/#include "&"/') \
  > "$tmp/all_headers.cpp"
[ "$(wc -l < "$tmp/all_headers.cpp")" -gt 50 ] || fail "too few headers installed"
# shellcheck disable=SC2046
c++ -std=c++17 -fsyntax-only $(pkg-config --cflags dtrain) "$tmp/all_headers.cpp" ||
  fail "the installed headers do not compile on their own"
unset PKG_CONFIG_PATH

# ---- 4. the out-of-tree example -------------------------------------------------
step "examples/custom-operator against the package"
cp -r "$source/examples/custom-operator" "$tmp/example"
rm -rf "$tmp/example/build"
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
cmake -S "$tmp/example" -B "$tmp/example-build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "the example does not configure"; }
cmake --build "$tmp/example-build" > "$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; fail "the example does not build"; }
commands=$tmp/example-build/compile_commands.json
[ -f "$commands" ] || fail "no compile_commands.json"
grep -q "spiral_operator.cpp" "$commands" || fail "compile_commands.json lacks the plugin"
for tree in "$source" "$build"; do
  if grep -q "$tree" "$commands" "$tmp/example-build/build.ninja" 2> /dev/null; then
    fail "the example's build refers to $tree"
  fi
done
plugin=$tmp/example-build/libmy_operators.so
[ -f "$plugin" ] || fail "no plugin built: $(ls "$tmp/example-build")"
if nm -D --defined-only "$plugin" | grep -q " T dtrain_plugin_init_v1$"; then :; else
  fail "the plugin does not export dtrain_plugin_init_v1"
fi
needed=$(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed" | grep -qx "libdtrain_core.so.$version" ||
  fail "the plugin does not link libdtrain_core.so.$version: $needed"
if echo "$needed" | grep -q "caf"; then fail "the plugin links CAF (dtrain::plugin should not)"; fi
grep -qa "dtrain-plugin-abi:dtrain $version;" "$plugin" ||
  fail "the plugin does not carry the ABI tag of dtrain $version"

# ---- 5. the driver on an embedded cluster ---------------------------------------
step "my_driver --epochs 1 (embedded cluster, 2 replicas)"
out=$(env -u LD_LIBRARY_PATH "$tmp/example-build/my_driver" --epochs 1 --replicas 2 2>&1) ||
  { echo "$out"; fail "my_driver failed"; }
echo "$out"
echo "$out" | grep -q "^cluster embedded, 2 replicas of spiral_mlp" || fail "not an embedded run"
hashes=$(echo "$out" | sed -n 's/^replica [01]: parameters hash \([0-9a-f]\{16\}\) .*$/\1/p')
[ "$(echo "$hashes" | wc -l)" = 2 ] || fail "expected two replicas' hashes, got: $hashes"
[ "$(echo "$hashes" | sort -u | wc -l)" = 1 ] || fail "the replicas' parameters differ: $hashes"

step "certificates from the installed dtrain: a cluster CA, a head, a node and a client certificate"
"$prefix/bin/dtrain" cert ca create > "$tmp/cert.log" || { cat "$tmp/cert.log"; fail "cert ca create"; }
for role in head node client; do
  "$prefix/bin/dtrain" cert create --$role >> "$tmp/cert.log" ||
    { cat "$tmp/cert.log"; fail "cert create --$role"; }
done
"$prefix/bin/dtrain" cert check > "$tmp/check.log" || { cat "$tmp/check.log"; fail "cert check"; }
[ "$(stat -c %a "$DTRAIN_HOME/tls/client-key.pem")" = 600 ] || fail "the client key is not mode 600"

step "my_driver --epochs 2 on the installed dtrain over mutual TLS: a head and two one-slot nodes"
# Each process finds its certificate in $DTRAIN_HOME/tls by its role.
"$prefix/bin/dtrain" start --head --port 0 --port-file "$tmp/head.address" --detach
head=$(cat "$tmp/head.address")
"$prefix/bin/dtrain" start --address "$head" --slots 1 --detach
"$prefix/bin/dtrain" start --address "$head" --slots 1 --detach
grep -q "mutual TLS as 'CN=head" "$DTRAIN_HOME"/head-*.log || fail "the head does not run TLS"
out=$(timeout 180 env -u LD_LIBRARY_PATH "$tmp/example-build/my_driver" --address "$head" \
        --epochs 2 --replicas 2 2>&1) || { echo "$out"; fail "my_driver on the TLS cluster failed"; }
echo "$out"
echo "$out" | grep -q "^cluster $head, 2 replicas of spiral_mlp" || fail "not run on $head"
# After each epoch: two replicas, on two different nodes, with equal parameters.
lines=$(echo "$out" | grep -c '^replica [01]: parameters hash')
[ "$lines" = 4 ] || fail "expected 2 epochs x 2 replicas' hashes, got $lines lines"
for epoch in 1 2; do
  block=$(echo "$out" | grep -A2 "^epoch $epoch:" | grep '^replica ')
  hashes=$(echo "$block" | sed -n 's/^replica [01]: parameters hash \([0-9a-f]\{16\}\) .*$/\1/p')
  nodes=$(echo "$block" | sed -n 's/^.*(node \([0-9]*\), .*$/\1/p')
  [ "$(echo "$hashes" | wc -l)" = 2 ] && [ "$(echo "$hashes" | sort -u | wc -l)" = 1 ] ||
    fail "epoch $epoch: the replicas' parameters differ: $hashes"
  [ "$(echo "$nodes" | sort -u | wc -l)" = 2 ] || fail "epoch $epoch: replicas not on two nodes: $nodes"
done
installs=$(grep -l "installed plugin" "$DTRAIN_HOME"/node-*.log 2> /dev/null | wc -l)
[ "$installs" = 2 ] || fail "expected both nodes to receive the plugin, $installs did"
shipped=$(ls "$DTRAIN_HOME/plugins" 2> /dev/null | grep -c '\.so$' || true)
[ "$shipped" -ge 1 ] || fail "no node kept the plugin under $DTRAIN_HOME/plugins"
"$prefix/bin/dtrain" stop > /dev/null

# ---- 6. a moved tree ----------------------------------------------------------
step "the prefix, moved"
mv "$prefix" "$tmp/moved"
out=$(env -u LD_LIBRARY_PATH "$tmp/moved/bin/dtrain" --version) || fail "the moved dtrain does not run"
[ "$out" = "dtrain $version" ] || fail "the moved dtrain printed '$out'"
out=$(PKG_CONFIG_PATH=$tmp/moved/$libdir/pkgconfig pkg-config --variable=libdir dtrain)
[ "$(cd "$out" && pwd)" = "$tmp/moved/$libdir" ] || fail "the moved dtrain.pc names libdir $out"

echo "PASS: dtrain $version installs and serves an out-of-tree project"
