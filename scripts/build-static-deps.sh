#!/usr/bin/env bash
# Builds the libraries kiln's portable build links statically (KILN_PORTABLE: the wheels, see
# docs/packaging.md) into .deps/static/{include,lib}, from Debian's own source packages:
#   libarchive  without libxml2, nettle, OpenSSL, ACL, xattr, LZ4 and LZO: kiln reads tar with
#               gzip, bzip2, xz and zstd and writes gzip'd pax, so the formats that pull libxml2
#               (and through it ICU's 30 MB of data) are left out
#   zlib, bzip2, zstd   built with -fPIC: Debian's libz.a, libbz2.a and libzstd.a are not
#               position-independent, so they cannot go into the extension module or a PIE
# liblzma.a is Debian's own (liblzma-dev): it is PIC. (xxHash is compiled inline, XXH_INLINE_ALL.)
# Each source is the version of the installed binary package when the archive still has it,
# else bookworm's newest (said when it happens). Idempotent: a finished build records
# its versions in .deps/static/kiln-versions and is kept while they match.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$root/.deps/static"
work="$root/.deps/static-build"
jobs="${KILN_DEPS_JOBS:-2}"

# A private apt state with Debian's deb-src entries: the machine's own sources are not touched.
apt_dir="$work/apt"
apt_options=(-o "Dir::Etc::SourceList=$apt_dir/none.list" -o "Dir::Etc::SourceParts=$apt_dir/parts"
             -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
             -o "APT::Sandbox::User=root")

binary_version() {  # the installed version of a binary package, or nothing
  dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true
}

wanted_versions() {
  local source binary
  for pair in zlib:zlib1g bzip2:libbz2-1.0 libzstd:libzstd1 libarchive:libarchive13; do
    source="${pair%%:*}" binary="${pair#*:}"
    echo "$source=$(binary_version "$binary")"
  done
}

if [ -f "$prefix/lib/libarchive.a" ] && [ "$(cat "$prefix/kiln-versions" 2>/dev/null)" = "$(wanted_versions)" ]; then
  echo "build-static-deps: present in $prefix"
  exit 0
fi

rm -rf "$work" "$prefix.partial"
mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache" "$work/src" "$prefix.partial/lib" "$prefix.partial/include"
touch "$apt_dir/none.list"
cat > "$apt_dir/parts/debian-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
echo "build-static-deps: reading Debian's source index"
apt-get "${apt_options[@]}" -qq update

# fetch SOURCE VERSION: unpacks the source package (Debian's patches applied) into $work/src/SOURCE.
fetch() {
  local source="$1" version="$2" dir="$work/src/$1"
  mkdir -p "$dir.download"
  if [ -z "$version" ] || ! (cd "$dir.download" && apt-get "${apt_options[@]}" -qq source "$source=$version" >/dev/null 2>&1); then
    # The security archive's pool is not always reachable: bookworm's own newest, then any newest.
    echo "build-static-deps: $source ${version:-(not installed)} cannot be fetched; using bookworm's newest source"
    rm -rf "$dir.download" && mkdir -p "$dir.download"
    (cd "$dir.download" && { apt-get "${apt_options[@]}" -qq source "$source/bookworm" >/dev/null 2>&1 ||
                             apt-get "${apt_options[@]}" -qq source "$source" >/dev/null; })
  fi
  mv "$(find "$dir.download" -mindepth 1 -maxdepth 1 -type d | head -1)" "$dir"
  rm -rf "$dir.download"
}

pic=(-O2 -fPIC -fvisibility=hidden)

while IFS== read -r source version; do
  echo "build-static-deps: fetching $source ${version}"
  fetch "$source" "$version"
done < <(wanted_versions)

echo "build-static-deps: zlib"
(cd "$work/src/zlib" && CFLAGS="${pic[*]}" ./configure --static --prefix="$prefix.partial" >/dev/null &&
 make -s -j"$jobs" libz.a >/dev/null && cp libz.a "$prefix.partial/lib/" && cp zlib.h zconf.h "$prefix.partial/include/")

echo "build-static-deps: bzip2"
(cd "$work/src/bzip2" && make -s -j"$jobs" libbz2.a CFLAGS="${pic[*]} -D_FILE_OFFSET_BITS=64" >/dev/null 2>&1 &&
 cp libbz2.a "$prefix.partial/lib/" && cp bzlib.h "$prefix.partial/include/")

echo "build-static-deps: zstd"
(cd "$work/src/libzstd/lib" && make -s -j"$jobs" libzstd.a CFLAGS="${pic[*]}" ZSTD_LEGACY_SUPPORT=0 >/dev/null &&
 cp libzstd.a "$prefix.partial/lib/" && cp zstd.h zstd_errors.h zdict.h "$prefix.partial/include/")

cp /usr/lib/x86_64-linux-gnu/liblzma.a "$prefix.partial/lib/"

echo "build-static-deps: libarchive"
off=()
for feature in LIBXML2 EXPAT OPENSSL NETTLE MBEDTLS LIBB2 LZ4 LZO CNG ACL XATTR TAR CPIO CAT TEST COVERAGE WERROR; do
  off+=("-DENABLE_$feature=OFF")
done
cmake -S "$work/src/libarchive" -B "$work/libarchive-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="${pic[*]}" -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
  "${off[@]}" -DENABLE_ZLIB=ON -DENABLE_BZip2=ON -DENABLE_LZMA=ON -DENABLE_ZSTD=ON -DENABLE_ICONV=ON \
  -DZLIB_LIBRARY="$prefix.partial/lib/libz.a" -DZLIB_INCLUDE_DIR="$prefix.partial/include" \
  -DBZIP2_LIBRARIES="$prefix.partial/lib/libbz2.a" -DBZIP2_INCLUDE_DIR="$prefix.partial/include" \
  -DLIBLZMA_LIBRARY="$prefix.partial/lib/liblzma.a" -DLIBLZMA_INCLUDE_DIR=/usr/include \
  -DZSTD_LIBRARY="$prefix.partial/lib/libzstd.a" -DZSTD_INCLUDE_DIR="$prefix.partial/include" >/dev/null
cmake --build "$work/libarchive-build" --target archive_static -j"$jobs" >/dev/null
cp "$work/libarchive-build/libarchive/libarchive.a" "$prefix.partial/lib/"
cp "$work/src/libarchive/libarchive/archive.h" "$work/src/libarchive/libarchive/archive_entry.h" "$prefix.partial/include/"

wanted_versions > "$prefix.partial/kiln-versions"
rm -rf "$prefix"
mv "$prefix.partial" "$prefix"
rm -rf "$work"
echo "build-static-deps: built $(ls "$prefix/lib" | tr '\n' ' ')in $prefix"
