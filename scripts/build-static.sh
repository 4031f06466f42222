#!/usr/bin/env bash
# Builds a fully static clrattach (musl libc, libcurl + OpenSSL, jansson linked in) into
# build/static/clrattach, for FROM-scratch images and debug containers that have no libc.
#
# The libraries come from Debian's SOURCE packages (the versions and security patches Debian
# ships), built with musl-gcc into build/static/deps/prefix. Each library is built once: a stamp
# file names the exact source version, so a rerun only relinks clrattach, and a Debian security
# update (new version) rebuilds just that library. Needs root only to add a deb-src line; run it
# again at any time. What was linked is written to build/static/components (one line per
# component, with its Debian source version), which `clrattach version` and the image's SBOM
# are generated from (scripts/build_info.py).
#
# The TLS library is OpenSSL 3.0 (Debian's, an LTS branch with Debian security support), chosen
# for maintenance over size (docs/security.md, "The static binary's TLS stack"): a security
# fix is a rebuild from Debian's newer source, with no local patch to port. scripts/patches/PKG/
# would hold a local patch (applied on top of Debian's, and the build fails when one does not
# apply); there is none, and none may touch certificate or host name verification: libcurl's
# own host check matches an address literal against the iPAddress SANs by their bytes. The
# glibc build uses Debian's libcurl4-openssl; clrattach's TLS settings (lib/report/k8s_client.c)
# are the same for both.
#
# ARCH=x86_64 (amd64, x64) or ARCH=aarch64 (arm64) picks the target; the default is the host's.
# A foreign target is cross-compiled on the host (no emulation): Debian has no cross musl-tools,
# but musl-dev:<arch> ships a <triplet>-gcc wrapper that drives the distribution's cross gcc
# with musl's headers and start files. Each architecture has its own output directory
# (build/static for the host's, build/static-arm64 for a foreign aarch64), dependencies included.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=apt-sources.sh
. "$ROOT/scripts/apt-sources.sh"
HOST_ARCH=$(uname -m)
case ${ARCH:-$HOST_ARCH} in
x86_64 | amd64 | x64) ARCH=x86_64 RID_ARCH=x64 ;;
aarch64 | arm64) ARCH=aarch64 RID_ARCH=arm64 ;;
*) echo "build-static: ARCH=$ARCH: only x86_64 (amd64) and aarch64 (arm64) are built" >&2; exit 2 ;;
esac
TRIPLET=$ARCH-linux-musl
# The kernel's uapi headers (asm/) of the target, from linux-libc-dev:<arch>.
MULTIARCH=$ARCH-linux-gnu
if [ "$ARCH" = "$HOST_ARCH" ]; then
    OUT=${STATIC_OUT:-$ROOT/build/static}
    MUSL_CC=musl-gcc
    CROSS=""
else
    OUT=${STATIC_OUT:-$ROOT/build/static-$RID_ARCH}
    MUSL_CC=$TRIPLET-gcc
    # binutils-<arch>-linux-gnu: a host ar/strip does not know a foreign ELF machine.
    CROSS=$MULTIARCH-
fi
# -mno-outline-atomics: gcc 10+ calls libgcc's __aarch64_* atomics helpers by default, whose
# initialiser reads the CPU's features with glibc's __getauxval, which musl does not have.
ARCH_CFLAGS=""
[ "$ARCH" = aarch64 ] && ARCH_CFLAGS="-mno-outline-atomics"
export AR=${CROSS}ar RANLIB=${CROSS}ranlib
DEPS=$OUT/deps
# The source trees are unpacked and built OUTSIDE build/: they hold files named *.d (curl's
# docs) that the top-level Makefile would include from build/.
SRC=$(mktemp -d "${TMPDIR:-/tmp}/clrattach-static-src.XXXXXX")
trap 'rm -rf "$SRC"' EXIT
PREFIX=$DEPS/prefix
JOBS=${JOBS:-$(nproc)}
export CC=$MUSL_CC
LOG=$DEPS/log
mkdir -p "$PREFIX/include" "$PREFIX/lib" "$LOG"

say() { echo "build-static: $*" >&2; }
die() { say "$*"; exit 1; }

command -v "$CC" >/dev/null || die "$CC missing: scripts/install-deps.sh (musl-tools, musl-dev:arm64)"
command -v "${CROSS}strip" >/dev/null || die "${CROSS}strip missing: scripts/install-deps.sh"
command -v cmake >/dev/null || die "cmake missing (jansson's build): apt-get install cmake"
command -v python3 >/dev/null || die "python3 missing (scripts/build_info.py): apt-get install python3"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# `apt-get source` needs deb-src entries: added for the Debian repositories apt already takes
# packages from (scripts/apt-sources.sh), never a mirror of our own choosing.
ensure_deb_src() {
    apt-cache showsrc jansson 2>/dev/null | grep -q '^Package: jansson' && return 0
    local entries
    entries=$(apt_deb_src_entries)
    [ -n "$entries" ] || die "apt names no Debian repository to take sources from: configure \
/etc/apt/sources.list.d/ (a Debian mirror) and run apt-get update"
    say "adding deb-src entries for the Debian repositories apt uses"
    printf '%s\n' "$entries" | as_root tee /etc/apt/sources.list.d/clrattach-src.sources >/dev/null
    as_root apt-get update -qq
}

# src_versions PKG: the source versions apt knows, newest first.
src_versions() {
    apt-cache showsrc "$1" | awk '/^Version:/ { print $2 }' | sort -rV | uniq
}

# fetch PKG: unpacks the newest Debian source that can be downloaded (with Debian's patches
# applied), and sets FETCHED_DIR and FETCHED_VER. A mirror may list a security update whose
# files it does not serve (yet): the next version down is then used, and said so. A fresh tree
# every time a build is needed: half-built trees are never reused.
fetch() {
    local pkg=$1 ver upstream
    for ver in $(src_versions "$pkg"); do
        upstream=${ver#*:}
        upstream=${upstream%-*}
        FETCHED_DIR=$SRC/$pkg-$upstream
        FETCHED_VER=$ver
        rm -rf "$FETCHED_DIR"
        if (cd "$SRC" && apt-get source -qq "$pkg=$ver" >"$LOG/$pkg.fetch" 2>&1); then
            [ -d "$FETCHED_DIR" ] || die "$pkg: expected $FETCHED_DIR after apt-get source"
            return 0
        fi
        say "$pkg $ver: source not downloadable, trying an older version"
    done
    cat "$LOG/$pkg.fetch" >&2
    die "apt-get source $pkg failed for every version"
}

# built PKG NEWEST: true when the prefix holds PKG built by this recipe at a time when NEWEST
# was the newest source version listed (RECIPE changes whenever a build function below changes
# how it builds). A new Debian version therefore triggers a rebuild of that package only.
RECIPE=5
built() { [ "$(sed -n 's/^.* \(recipe .*\)$/\1/p' "$DEPS/$1.stamp" 2>/dev/null)" = "recipe $RECIPE newest $2" ]; }

# run PKG CMD...: runs a build step with its output in the log; shows the tail on failure.
run() {
    local pkg=$1
    shift
    if ! "$@" >>"$LOG/$pkg.build" 2>&1; then
        tail -n 40 "$LOG/$pkg.build" >&2
        die "$pkg: '$*' failed (full log: $LOG/$pkg.build)"
    fi
}

# musl-gcc has no kernel headers; clrattach needs linux/ and asm/. A copy of the
# host's uapi headers in the prefix, rather than -idirafter /usr/include, keeps glibc's own
# headers out of reach of a musl build (a glibc <stdio.h> found by mistake would link, then fail).
kernel_headers() {
    [ -d "/usr/include/$MULTIARCH/asm" ] ||
        die "/usr/include/$MULTIARCH/asm missing: apt-get install linux-libc-dev:$RID_ARCH"
    [ -f "$PREFIX/include/linux/seccomp.h" ] && [ -f "$PREFIX/include/asm/unistd.h" ] && return 0
    say "copying kernel uapi headers into the prefix"
    cp -a /usr/include/linux /usr/include/asm-generic "$PREFIX/include/"
    rm -rf "$PREFIX/include/asm"
    cp -aL "/usr/include/$MULTIARCH/asm" "$PREFIX/include/asm"
}

# Each function and datum in its own section, so that the final link (--gc-sections) keeps only
# what clrattach reaches.
COMMON_CFLAGS="-O2 -fPIC -fstack-protector-strong -ffunction-sections -fdata-sections${ARCH_CFLAGS:+ $ARCH_CFLAGS}"
# CMake (jansson's build) takes the target system from the host unless told it cross-compiles.
CMAKE_CROSS=()
[ -n "$CROSS" ] && CMAKE_CROSS=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$ARCH")

build_openssl() {
    local dir=$1 target
    case $ARCH in
    x86_64) target=linux-x86_64 ;;
    aarch64) target=linux-aarch64 ;;
    esac
    # libssl and libcrypto only (build_libs: no apps, tests or docs), configured down to a
    # TLS 1.2/1.3 client with what an API server offers: ECDHE (P-256/P-384, X25519) with RSA
    # (PKCS#1, PSS) or ECDSA certificates, AES-GCM (every TLS 1.3 peer must offer
    # TLS_AES_128_GCM_SHA256; ChaCha20-Poly1305 is left out). Nothing below TLS 1.2, no DTLS,
    # no legacy provider or engines, no loadable modules (a static binary cannot load them, and
    # nothing read from the environment can make it try), no config file (no-autoload-config;
    # curl is also built not to load one), no finite-field DH, DSA, DES, RC2/RC4/RC5, IDEA,
    # SEED, Camellia, ARIA, SM2/3/4, GOST, Whirlpool, CMAC, no CMS, CT, OCSP, TS, CMP, SRP, PSK,
    # SRTP or NPN: code that is not there needs no security update. No deprecated APIs (curl
    # 7.88 has none it needs), no threads (clrattach runs none), no secure heap (it maps memory
    # and locks it, which the seccomp filter has no need to allow), no multi-block CBC (a
    # server-side bulk path), no source file names in error records.
    # Security level 2 by default, as Debian's own openssl.cnf sets it (no config is read here;
    # OPENSSLDIR names no directory, since trust is only ever the CA file clrattach names).
    # -Os and -ffunction-sections/-fdata-sections with the final link's --gc-sections: the
    # binary's size is most of its resident memory (its pages are mapped as they are read), and
    # a report is a handful of handshakes, so size wins over speed here.
    (cd "$dir" && run openssl ./Configure "$target" --prefix="$PREFIX" --libdir=lib \
        --openssldir=/nonexistent \
        no-shared no-dso no-module no-engine no-legacy no-deprecated no-tests \
        no-autoload-config no-threads no-async no-secure-memory no-afalgeng no-ui-console \
        no-ssl3 no-tls1 no-tls1_1 no-dtls no-srp no-psk no-srtp no-sctp no-nextprotoneg \
        no-comp no-ct no-cms no-cmp no-ocsp no-ts no-rfc3779 no-ssl-trace \
        no-dh no-dsa no-des no-rc2 no-rc4 no-rc5 no-md4 no-mdc2 no-rmd160 no-idea no-seed \
        no-bf no-cast no-camellia no-aria no-sm2 no-sm3 no-sm4 no-gost no-whirlpool \
        no-blake2 no-siphash no-siv no-ocb no-scrypt no-ec2m no-cmac no-chacha no-poly1305 \
        no-multiblock no-filenames \
        -DOPENSSL_TLS_SECURITY_LEVEL=2 $COMMON_CFLAGS -Os)
    run openssl make -C "$dir" -j"$JOBS" build_libs
    run openssl make -C "$dir" install_dev
    # What was asked for must be what was built (configdata names every disabled feature).
    local off
    for off in tls1_1 tls1 ssl3 legacy engine module dso deprecated autoload-config; do
        grep -q "\"$off\" => \"option" "$dir/configdata.pm" || die "openssl: no-$off not in effect"
    done
}

build_jansson() {
    local dir=$1
    # Debian packages jansson's git tree, which has no generated configure script: its CMake
    # build avoids needing autoconf/automake/libtool.
    run jansson cmake -S "$dir" -B "$dir/_build" -DCMAKE_C_COMPILER="$CC" "${CMAKE_CROSS[@]}" \
        -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$ARCH" \
        -DCMAKE_AR="$(command -v "$AR")" -DCMAKE_RANLIB="$(command -v "$RANLIB")" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$COMMON_CFLAGS" \
        -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib \
        -DJANSSON_BUILD_SHARED_LIBS=OFF -DJANSSON_BUILD_DOCS=OFF -DJANSSON_EXAMPLES=OFF \
        -DJANSSON_WITHOUT_TESTS=ON
    run jansson cmake --build "$dir/_build" -j"$JOBS"
    run jansson cmake --install "$dir/_build"
}

build_curl() {
    local dir=$1
    # HTTPS only, with what clrattach uses: a CA file, TLS 1.2+, a bearer token it sets as a
    # header itself, no redirects. Everything else is compiled out: other protocols, proxies
    # (so *_proxy variables cannot route the token anywhere), HTTP authentication schemes,
    # cookies, alt-svc, HSTS, netrc, DoH, MIME, IDN, compression, verbose messages. No CA
    # bundle or path is built in: clrattach always names its CA file.
    # -Os, as for OpenSSL (build_openssl says why).
    # No threaded resolver: musl's getaddrinfo has its own timeouts, the API address is
    # normally an IP (KUBERNETES_SERVICE_HOST), and one thread fewer means no clone() to allow.
    (cd "$dir" && run curl ./configure --host="$TRIPLET" --prefix="$PREFIX" \
        --disable-shared --enable-static \
        --with-openssl="$PREFIX" --without-wolfssl --without-gnutls --without-nss \
        --without-mbedtls --without-rustls --without-bearssl --disable-openssl-auto-load-config \
        --without-ca-bundle --without-ca-path --without-ca-fallback \
        --disable-threaded-resolver --disable-pthreads --without-zlib --without-brotli \
        --without-zstd --without-libpsl --without-libidn2 --without-nghttp2 --without-nghttp3 \
        --without-ngtcp2 --without-libssh2 --without-libssh --without-librtmp \
        --without-gssapi --disable-ldap --disable-ldaps --disable-rtsp --disable-dict \
        --disable-telnet --disable-tftp --disable-pop3 --disable-imap --disable-smb \
        --disable-smtp --disable-gopher --disable-mqtt --disable-ftp --disable-file \
        --disable-proxy --disable-http-auth --disable-crypto-auth --disable-tls-srp \
        --disable-ntlm --disable-ntlm-wb --disable-kerberos-auth --disable-negotiate-auth \
        --disable-cookies --disable-alt-svc --disable-hsts --disable-netrc --disable-manual \
        --disable-doh --disable-mime --disable-progress-meter --disable-verbose \
        --disable-get-easy-options --disable-headers-api --disable-socketpair \
        --disable-unix-sockets --disable-websockets --disable-libcurl-option \
        CFLAGS="$COMMON_CFLAGS -Os" CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib")
    run curl make -C "$dir/lib" -j"$JOBS" install
    run curl make -C "$dir/include" install
    # The build must have what was asked for and nothing else (a host library would not link
    # statically anyway, but the failure would be far from its cause).
    local want
    for want in USE_OPENSSL CURL_DISABLE_OPENSSL_AUTO_LOAD_CONFIG CURL_DISABLE_PROXY \
        CURL_DISABLE_COOKIES CURL_DISABLE_FTP CURL_DISABLE_LDAP CURL_DISABLE_HTTP_AUTH \
        CURL_DISABLE_DOH; do
        grep -q "^#define $want 1" "$dir/lib/curl_config.h" || die "curl: $want not set"
    done
    if grep -qE '^#define (USE_WOLFSSL|USE_MBEDTLS|USE_GNUTLS|USE_NGHTTP2|HAVE_LIBZ|USE_LIBPSL|USE_LIBIDN2|USE_THREADS_POSIX) 1' \
        "$dir/lib/curl_config.h"; then
        die "curl: configure enabled an unwanted feature (see $dir/lib/curl_config.h)"
    fi
}

# apply_patches PKG DIR: applies scripts/patches/PKG/*.patch (in name order) on top of Debian's
# own patches. Each one says at its top what it changes and why.
PATCHES=$ROOT/scripts/patches
apply_patches() {
    local pkg=$1 dir=$2 p
    for p in "$PATCHES/$pkg"/*.patch; do
        [ -f "$p" ] || continue
        say "$pkg: applying $(basename "$p")"
        run "$pkg" patch -d "$dir" -p1 --forward --no-backup-if-mismatch -i "$p"
    done
}

# patch_sum PKG: names PKG's build function and the patches applied to it, so that a changed
# flag or patch rebuilds it.
patch_sum() {
    local p
    {
        declare -f "build_$1"
        echo "$COMMON_CFLAGS"
        for p in "$PATCHES/$1"/*.patch; do
            if [ -f "$p" ]; then cat "$p"; fi
        done
    } | sha256sum | cut -c1-16
}

ensure_deb_src
kernel_headers

start=$(date +%s)
# Order matters: curl links against OpenSSL. What earlier recipes built and clrattach no longer
# links (wolfSSL, libseccomp) is removed from the prefix, so that nothing can link it by mistake.
rm -f "$DEPS/wolfssl.stamp" "$DEPS/libseccomp.stamp" "$PREFIX/lib/libwolfssl.a" "$PREFIX/lib/libseccomp.a"
rm -rf "$PREFIX/include/wolfssl" "$PREFIX/include/seccomp.h" "$PREFIX/include/seccomp-syscalls.h"
for pkg in openssl jansson curl; do
    newest=$(src_versions "$pkg" | head -n1)
    [ -n "$newest" ] || die "no Debian source for $pkg"
    newest="$newest build $(patch_sum "$pkg")"
    # curl compiles against OpenSSL's headers: a rebuilt OpenSSL rebuilds it too.
    [ "$pkg" = curl ] && newest="$newest tls $(sha256sum <"$DEPS/openssl.stamp" | cut -c1-16)"
    if built "$pkg" "$newest"; then
        continue
    fi
    : >"$LOG/$pkg.build"
    fetch "$pkg"
    apply_patches "$pkg" "$FETCHED_DIR"
    say "building $pkg $FETCHED_VER"
    "build_$pkg" "$FETCHED_DIR"
    echo "$FETCHED_VER recipe $RECIPE newest $newest" >"$DEPS/$pkg.stamp"
done
say "dependencies ready ($(($(date +%s) - start)) s)"

# What the binary is made of (`clrattach version`, the image's SBOM: scripts/build_info.py), one
# line per linked component: name, upstream version, Debian source package and version, licence.
# The three libraries built above by their stamps (the version actually fetched); musl's libc
# and gcc's libgcc by the Debian package that installed the very files the compiler links.
# upstream VERSION: a Debian version without its epoch and revision.
upstream() {
    local v=${1#*:}
    echo "${v%-*}"
}
# deb_component NAME FILE LICENCE: the line for the Debian package that owns FILE.
deb_component() {
    local name=$1 file=$2 lic=$3 pkg src
    pkg=$(dpkg-query -S "$(readlink -f "$file")" 2>/dev/null | head -n1) || true
    pkg=${pkg%%: *}
    [ -n "$pkg" ] || die "$name: no Debian package owns $file"
    # The upstream version from the binary package's own version: a cross toolchain's source
    # (gcc-12-cross) is versioned on its own.
    src=$(dpkg-query -W -f='${Version}\t${source:Package}\t${source:Version}' "$pkg") ||
        die "$name: dpkg-query $pkg failed"
    local ver=${src%%$'\t'*}
    src=${src#*$'\t'}
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(upstream "$ver")" "${src%%$'\t'*}" \
        "${src#*$'\t'}" "$lic"
}
COMPONENTS=$OUT/components
# The libc and compiler runtime archives this compiler links statically, as its linker lists them.
printf 'int main(void) { return 0; }\n' >"$DEPS/probe-link.c"
"$CC" $ARCH_CFLAGS -static -Wl,--trace -o "$DEPS/probe-link" "$DEPS/probe-link.c" \
    >"$DEPS/probe-link.trace" 2>&1 || die "$CC cannot link a static program"
{
    for pkg in curl openssl jansson; do
        ver=$(cut -d' ' -f1 "$DEPS/$pkg.stamp")
        case $pkg in
        curl) lic=curl ;;
        openssl) lic=Apache-2.0 ;;
        jansson) lic=MIT ;;
        esac
        printf '%s\t%s\t%s\t%s\t%s\n' "$pkg" "$(upstream "$ver")" "$pkg" "$ver" "$lic"
    done
    deb_component musl "$(grep -m1 '/libc\.a$' "$DEPS/probe-link.trace")" MIT
    deb_component libgcc "$(grep -m1 '/libgcc\.a$' "$DEPS/probe-link.trace")" \
        "GPL-3.0-or-later WITH GCC-exception-3.1"
} >"$COMPONENTS.tmp"
mv "$COMPONENTS.tmp" "$COMPONENTS"

# musl before 1.2.5 (Debian bookworm ships 1.2.3) has no renameat2() wrapper, which
# lib/deliver/deliver.c uses for RENAME_NOREPLACE. Rather than a musl-only branch in the sources,
# the static build gets the missing wrapper as a raw syscall; it is only added when the libc lacks
# it.
compat_shim() {
    local inc=$PREFIX/include/clrattach-musl-compat.h
    printf '#define _GNU_SOURCE\n#include <stdio.h>\nint main(void) { return renameat2(0, "", 0, "", 0); }\n' \
        >"$DEPS/probe-renameat2.c"
    if "$CC" $ARCH_CFLAGS -static -Werror=implicit-function-declaration -o "$DEPS/probe-renameat2" \
        "$DEPS/probe-renameat2.c" 2>/dev/null; then
        rm -f "$inc" "$PREFIX/lib/libclrcompat.a"
        return 0
    fi
    COMPAT_CPPFLAGS="-include $inc"
    COMPAT_LIBS="-lclrcompat"
    say "musl lacks renameat2: using a syscall wrapper"
    # Kept when present, so that a rerun does not touch the header every object depends on.
    [ -f "$inc" ] && [ -f "$PREFIX/lib/libclrcompat.a" ] && return 0
    cat >"$inc" <<'EOF2'
/* Generated by scripts/build-static.sh: wrappers this musl lacks (added in musl 1.2.5). */
#ifndef CLRATTACH_MUSL_COMPAT_H
#define CLRATTACH_MUSL_COMPAT_H
#define RENAME_NOREPLACE (1 << 0)
int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags);
#endif
EOF2
    cat >"$DEPS/compat.c" <<'EOF2'
#include <sys/syscall.h>
#include <unistd.h>
#include "clrattach-musl-compat.h"

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags)
{
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}
EOF2
    "$CC" $ARCH_CFLAGS -std=gnu11 -O2 -Wall -Wextra -Werror -Wmissing-prototypes -fstack-protector-strong \
        -I"$PREFIX/include" -c -o "$DEPS/compat.o" "$DEPS/compat.c"
    "$AR" rcs "$PREFIX/lib/libclrcompat.a" "$DEPS/compat.o"
}
COMPAT_CPPFLAGS=""
COMPAT_LIBS=""
compat_shim

# clrattach itself through the project Makefile, so the warning and hardening flags are exactly
# those of the glibc build. CPPFLAGS and LDFLAGS given on the command line replace the
# Makefile's own, hence -Ilib here.
OBJ=$OUT/obj
# make does not notice changed flags or a changed libc: objects built with others are dropped.
flags="musl $ARCH $("$CC" -dumpversion) $(cat "$DEPS"/*.stamp | tr '\n' ' ') $COMPAT_CPPFLAGS"
if [ "$(cat "$OUT/obj.flags" 2>/dev/null)" != "$flags" ]; then
    rm -rf "$OBJ"
    echo "$flags" >"$OUT/obj.flags"
fi
# SAN= : a `make SAN=1 test` passes SAN down; a sanitizer runtime cannot be linked statically
# with musl, and the static binary is the product, not a test build. SECCOMP_ARCH names the
# architecture whose syscall numbers a build-time filter is generated for.
# COMMIT: what `clrattach version` and the SBOM name; a source copy without .git (the image's
# builder) is given it in the environment, else scripts/commit.sh finds it (git, or the COMMIT
# file of a `git archive` copy).
[ "${COMMIT:-unknown}" != unknown ] || COMMIT=$("$ROOT/scripts/commit.sh")
# GLIBC_CC and MUSL_CC: the env loaders clrattach carries inside it (Makefile, envload_blob),
# one per C library, for the CPU it is built for.
make -C "$ROOT" -j"$JOBS" --no-print-directory BUILD="${OBJ#"$ROOT"/}" CC="$CC" SAN= \
    GLIBC_CC="${CROSS}gcc" MUSL_CC="$MUSL_CC" \
    SECCOMP_ARCH="$ARCH" COMPONENTS="$COMPONENTS" COMMIT="$COMMIT" \
    CPPFLAGS="-Ilib -I$PREFIX/include $COMPAT_CPPFLAGS${ARCH_CFLAGS:+ $ARCH_CFLAGS}" \
    LDFLAGS="-static -L$PREFIX/lib -Wl,--gc-sections -Wl,-Map=$OUT/clrattach.map" \
    LDLIBS_TOOL="-lcurl -lssl -lcrypto -ljansson $COMPAT_LIBS" \
    "${OBJ#"$ROOT"/}/clrattach"
cp "$OBJ/clrattach" "$OUT/clrattach.tmp"
mv "$OUT/clrattach.tmp" "$OUT/clrattach"

# A dynamic section (an interpreter or a NEEDED entry) would mean the binary needs a libc; the
# machine must be the one asked for.
machine=$(readelf -h "$OUT/clrattach" | sed -n 's/^ *Machine: *//p')
case $ARCH:$machine in
x86_64:*X86-64* | aarch64:*AArch64*) ;;
*) die "$OUT/clrattach is built for '$machine', not $ARCH" ;;
esac
if readelf -d "$OUT/clrattach" 2>/dev/null | grep -q NEEDED || readelf -l "$OUT/clrattach" | grep -q INTERP; then
    die "$OUT/clrattach is not static"
fi
# The components file must name what the link really took: every archive a member came from
# is a listed component's (or clrattach's own), and every component gave the link something
# (gcc's start files, crtbegin*.o, count for libgcc: they are GCC's runtime too).
linked=$(grep -oE '^/[^ (]+\.a\(' "$OUT/clrattach.map" | sed 's|.*/||; s|($||' | sort -u)
seen=" "
grep -qE '^LOAD /.*/crtbegin[^/]*\.o$' "$OUT/clrattach.map" && seen=" libgcc "
for a in $linked; do
    case $a in
    libclrattach.a | libclrcompat.a) continue ;;
    libcurl.a) c=curl ;;
    libssl.a | libcrypto.a) c=openssl ;;
    libjansson.a) c=jansson ;;
    libc.a) c=musl ;;
    libgcc.a | libgcc_eh.a) c=libgcc ;;
    *) die "the link took members of $a, which no component names" ;;
    esac
    seen="$seen$c "
done
for c in $(cut -f1 "$COMPONENTS"); do
    case $seen in *" $c "*) ;; *) die "component $c is listed but nothing of it was linked" ;; esac
done
${CROSS}strip -o "$OUT/clrattach.stripped" "$OUT/clrattach"
# The SBOM of the image (SPDX 2.3 JSON), from the very components file compiled in above.
OTEL_AGENT_PACKAGES="$ROOT/build/otel-agent/packages.tsv" \
    python3 "$ROOT/scripts/build_info.py" spdx "$COMPONENTS" "$(cat "$ROOT/VERSION")" "$COMMIT" "$ARCH" \
    >"$OUT/clrattach.spdx.json.tmp"
mv "$OUT/clrattach.spdx.json.tmp" "$OUT/clrattach.spdx.json"
say "$OUT/clrattach: $(stat -c %s "$OUT/clrattach") bytes, $(stat -c %s "$OUT/clrattach.stripped") stripped"
