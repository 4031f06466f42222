#!/usr/bin/env bash
# Builds a fully static clrattach (musl libc, libcurl + wolfSSL, jansson, libseccomp linked in)
# into build/static/clrattach, for FROM-scratch images and debug containers that have no libc.
#
# The libraries come from Debian's SOURCE packages (the versions and security patches Debian
# ships), built with musl-gcc into build/static/deps/prefix. Each library is built once: a stamp
# file names the exact source version, so a rerun only relinks clrattach, and a Debian security
# update (new version) rebuilds just that library. Needs root only to add a deb-src line and to
# install gperf; run it again at any time.
#
# The TLS library is wolfSSL (about 0.8 MiB of the binary, against 2.5 MiB of OpenSSL), with
# one patch (scripts/patches/wolfssl): it matches an API server reached by IP against the
# certificate's iPAddress SANs by their bytes, so that an IPv6 literal verifies. Debian's
# mbedTLS (2.28) was not an option: it does not match iPAddress SANs at all, and in-cluster
# clients reach the API server by IP (KUBERNETES_SERVICE_HOST). The glibc build keeps
# Debian's libcurl4-openssl; clrattach's TLS settings (lib/report/k8s_client.c) are the same for
# both.
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

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# libseccomp's Debian patch updates the syscall table, so its gperf hash must be regenerated.
if ! command -v gperf >/dev/null; then
    say "installing gperf (libseccomp's syscall table)"
    as_root apt-get install -y -qq --no-install-recommends gperf >/dev/null
fi

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

# musl-gcc has no kernel headers; libseccomp and clrattach need linux/ and asm/. A copy of the
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

COMMON_CFLAGS="-O2 -fPIC -fstack-protector-strong${ARCH_CFLAGS:+ $ARCH_CFLAGS}"
# CMake takes the target CPU from the host unless told it cross-compiles: wolfSSL would then
# pick x86_64 code paths (WOLFSSL_X86_64_BUILD) for an aarch64 build.
CMAKE_CROSS=()
[ -n "$CROSS" ] && CMAKE_CROSS=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$ARCH")

build_wolfssl() {
    local dir=$1
    # wolfSSL rather than OpenSSL (4 MiB binary) or mbedTLS (no iPAddress SAN matching): a
    # TLS 1.2/1.3 client with what the API server needs and nothing else. NO_OLD_TLS: nothing
    # below TLS 1.2 is even compiled. ECDHE with P-256/P-384 (no finite-field DH, DSA, 3DES,
    # RC4, MD4/MD5), RSA (PKCS#1 and PSS) and ECDSA certificates, AES-GCM/CBC and ChaCha20-
    # Poly1305. Single-threaded: clrattach runs no threads. No system CA store
    # (WOLFSSL_SYS_CA_CERTS): only the CA file clrattach names is ever read.
    #   WOLFSSL_IP_ALT_NAME  iPAddress SANs decoded and matched (by their bytes, see
    #                        scripts/patches/wolfssl/ip-san-bytes.patch)
    #   WOLFSSL_GETRANDOM    seeds from getrandom(2) only: an empty root has no /dev/urandom
    #   HAVE_SNI             the server name for a host name (libcurl sends none for an address)
    #   SMALL_SESSION_CACHE  a few sessions: one process talks to one API server
    #   OPENSSL_EXTRA        the OpenSSL-compatible names (SSL_CTX_new, ...) libcurl 7.88's
    #                        wolfSSL backend is written against (its RSA wrappers need OAEP)
    #   WOLFSSL_FILE_READ_WITH_READ  the CA file read with read(2): musl's fread() issues
    #                        readv(2), which the seccomp filter does not allow (patch
    #                        read-files-with-read.patch)
    # The -D flags given through CMAKE_C_FLAGS are also written into the installed
    # wolfssl/options.h, so libcurl sees the very configuration the library was built with.
    # wolfSSL builds with -Werror; GCC 12 reports a false stringop-overflow in the constant-time
    # HMAC of TLS_hmac (the length is bounded by the digest size it cannot see through).
    local defs="-DWOLFSSL_IP_ALT_NAME -DWOLFSSL_GETRANDOM -DHAVE_SNI -DHAVE_TLS_EXTENSIONS"
    defs="$defs -DSMALL_SESSION_CACHE -DOPENSSL_EXTRA -DWOLFSSL_FILE_READ_WITH_READ"
    run wolfssl cmake -S "$dir" -B "$dir/_build" -DCMAKE_C_COMPILER="$CC" "${CMAKE_CROSS[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib \
        -DBUILD_SHARED_LIBS=OFF -DWOLFSSL_REPRODUCIBLE_BUILD=yes \
        -DWOLFSSL_EXAMPLES=no -DWOLFSSL_CRYPT_TESTS=no -DWOLFSSL_SINGLE_THREADED=yes \
        -DWOLFSSL_TLS13=yes -DWOLFSSL_TLSV12=yes -DWOLFSSL_OLD_TLS=no -DWOLFSSL_DTLS=no \
        -DWOLFSSL_HARDEN=yes -DWOLFSSL_RSA=yes -DWOLFSSL_RSA_PSS=yes -DWOLFSSL_ECC=yes \
        -DWOLFSSL_SHA384=yes -DWOLFSSL_SHA512=yes -DWOLFSSL_AESGCM=yes -DWOLFSSL_AESCBC=yes \
        -DWOLFSSL_CHACHA=yes -DWOLFSSL_POLY1305=yes -DWOLFSSL_FILESYSTEM=yes \
        -DWOLFSSL_DH=no -DWOLFSSL_DSA=no -DWOLFSSL_DES3=no -DWOLFSSL_ARC4=no -DWOLFSSL_MD4=no \
        -DWOLFSSL_MD5=no -DWOLFSSL_SHA3=no -DWOLFSSL_SHAKE256=no \
        -DWOLFSSL_CURVE25519=no -DWOLFSSL_ED25519=no -DWOLFSSL_CURVE448=no -DWOLFSSL_ED448=no \
        -DWOLFSSL_AESCCM=no -DWOLFSSL_AESCTR=no -DWOLFSSL_AESOFB=no -DWOLFSSL_AESCFB=no \
        -DWOLFSSL_AESSIV=no -DWOLFSSL_CMAC=no -DWOLFSSL_PKCS12=no -DWOLFSSL_PWDBASED=no \
        -DWOLFSSL_ENCKEYS=no -DWOLFSSL_SESSION_TICKET=no -DWOLFSSL_HRR_COOKIE=no \
        -DWOLFSSL_POSTAUTH=no -DWOLFSSL_SYS_CA_CERTS=no -DWOLFSSL_CRYPTOCB=no \
        -DCMAKE_C_FLAGS="$COMMON_CFLAGS -Wno-error=stringop-overflow $defs"
    run wolfssl cmake --build "$dir/_build" -j"$JOBS"
    run wolfssl cmake --install "$dir/_build"
    # The patched matcher must be what was compiled, and old protocol versions must be out.
    grep -q 'define WOLFSSL_IP_ALT_NAME' "$PREFIX/include/wolfssl/options.h" ||
        die "wolfssl: WOLFSSL_IP_ALT_NAME missing from options.h"
    grep -q 'define NO_OLD_TLS' "$PREFIX/include/wolfssl/options.h" ||
        die "wolfssl: NO_OLD_TLS missing from options.h"
    grep -q 'HAVE_HOST_IP_ADDR' "$dir/src/internal.c" || die "wolfssl: IP SAN patch not applied"
    grep -q 'define WOLFSSL_FILE_READ_WITH_READ' "$PREFIX/include/wolfssl/options.h" ||
        die "wolfssl: WOLFSSL_FILE_READ_WITH_READ missing from options.h"
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

build_libseccomp() {
    local dir=$1
    # Only the library and its header: the tools and tests are not needed.
    (cd "$dir" && run libseccomp ./configure --host="$TRIPLET" --prefix="$PREFIX" \
        --disable-shared --enable-static --disable-python \
        CFLAGS="$COMMON_CFLAGS" CPPFLAGS="-I$PREFIX/include")
    run libseccomp make -C "$dir/src" -j"$JOBS" install
    run libseccomp make -C "$dir/include" install
}

build_curl() {
    local dir=$1
    # HTTPS only, with what clrattach uses: a CA file, TLS 1.2+, a bearer token it sets as a
    # header itself, no redirects. Everything else is compiled out: other protocols, proxies
    # (so *_proxy variables cannot route the token anywhere), HTTP authentication schemes,
    # cookies, alt-svc, HSTS, netrc, DoH, MIME, IDN, compression, verbose messages. No CA
    # bundle or path is built in: clrattach always names its CA file.
    # No threaded resolver: musl's getaddrinfo has its own timeouts, the API address is
    # normally an IP (KUBERNETES_SERVICE_HOST), and one thread fewer means no clone() to allow.
    (cd "$dir" && run curl ./configure --host="$TRIPLET" --prefix="$PREFIX" \
        --disable-shared --enable-static \
        --with-wolfssl="$PREFIX" --without-openssl --without-gnutls --without-nss \
        --without-mbedtls --without-rustls --without-bearssl \
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
        CFLAGS="$COMMON_CFLAGS" CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib")
    run curl make -C "$dir/lib" -j"$JOBS" install
    run curl make -C "$dir/include" install
    # The build must have what was asked for and nothing else (a host library would not link
    # statically anyway, but the failure would be far from its cause).
    local want
    for want in USE_WOLFSSL CURL_DISABLE_PROXY CURL_DISABLE_COOKIES CURL_DISABLE_FTP \
        CURL_DISABLE_LDAP CURL_DISABLE_HTTP_AUTH CURL_DISABLE_DOH; do
        grep -q "^#define $want 1" "$dir/lib/curl_config.h" || die "curl: $want not set"
    done
    if grep -qE '^#define (USE_OPENSSL|USE_MBEDTLS|USE_GNUTLS|USE_NGHTTP2|HAVE_LIBZ|USE_LIBPSL|USE_LIBIDN2|USE_THREADS_POSIX) 1' \
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
        for p in "$PATCHES/$1"/*.patch; do
            if [ -f "$p" ]; then cat "$p"; fi
        done
    } | sha256sum | cut -c1-16
}

ensure_deb_src
kernel_headers

start=$(date +%s)
# Order matters: curl links against wolfSSL. The OpenSSL of an earlier recipe is removed from
# the prefix, so that nothing can link it by mistake.
rm -f "$DEPS/openssl.stamp" "$PREFIX/lib/libssl.a" "$PREFIX/lib/libcrypto.a"
rm -rf "$PREFIX/include/openssl"
for pkg in wolfssl jansson libseccomp curl; do
    newest=$(src_versions "$pkg" | head -n1)
    [ -n "$newest" ] || die "no Debian source for $pkg"
    newest="$newest build $(patch_sum "$pkg")"
    # curl compiles against wolfSSL's options.h: a rebuilt wolfSSL rebuilds it too.
    [ "$pkg" = curl ] && newest="$newest tls $(sha256sum <"$DEPS/wolfssl.stamp" | cut -c1-16)"
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
make -C "$ROOT" -j"$JOBS" --no-print-directory BUILD="${OBJ#"$ROOT"/}" CC="$CC" SAN= \
    SECCOMP_ARCH="$ARCH" \
    CPPFLAGS="-Ilib -I$PREFIX/include $COMPAT_CPPFLAGS${ARCH_CFLAGS:+ $ARCH_CFLAGS}" \
    LDFLAGS="-static -L$PREFIX/lib" \
    LDLIBS_TOOL="-lcurl -lwolfssl -ljansson -lseccomp $COMPAT_LIBS" \
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
${CROSS}strip -o "$OUT/clrattach.stripped" "$OUT/clrattach"
say "$OUT/clrattach: $(stat -c %s "$OUT/clrattach") bytes, $(stat -c %s "$OUT/clrattach.stripped") stripped"
