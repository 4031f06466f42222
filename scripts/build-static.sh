#!/usr/bin/env bash
# Builds a fully static clrattach (musl libc, libcurl + OpenSSL, jansson, libseccomp linked in)
# into build/static/clrattach, for FROM-scratch images and debug containers that have no libc.
#
# The libraries come from Debian's SOURCE packages (the versions and security patches Debian
# ships), built with musl-gcc into build/static/deps/prefix. Each library is built once: a stamp
# file names the exact source version, so a rerun only relinks clrattach, and a Debian security
# update (new version) rebuilds just that library. Needs root only to add a deb-src line and to
# install gperf; run it again at any time.
#
# Why OpenSSL and not the smaller, faster-building mbedTLS: Debian's mbedTLS (2.28) does not
# match iPAddress SANs, and in-cluster clients reach the API server by IP
# (KUBERNETES_SERVICE_HOST), whose certificate names it only as an IP SAN: verification fails
# with BADCERT_CN_MISMATCH. OpenSSL is also what the glibc build uses through libcurl4-openssl.
#
# ARCH=x86_64 (amd64, x64) or ARCH=aarch64 (arm64) picks the target; the default is the host's.
# A foreign target is cross-compiled on the host (no emulation): Debian has no cross musl-tools,
# but musl-dev:<arch> ships a <triplet>-gcc wrapper that drives the distribution's cross gcc
# with musl's headers and start files. Each architecture has its own output directory
# (build/static for the host's, build/static-arm64 for a foreign aarch64), dependencies included.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
# docs, OpenSSL's dependency files) that the top-level Makefile would include from build/.
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

# `apt-get source` needs deb-src entries; add them for the release this host already uses.
ensure_deb_src() {
    apt-cache showsrc jansson 2>/dev/null | grep -q '^Package: jansson' && return 0
    local codename
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    say "adding deb-src entries for $codename"
    as_root tee /etc/apt/sources.list.d/clrattach-src.sources >/dev/null <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
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
RECIPE=4
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
# OpenSSL's own name for the target platform.
OPENSSL_TARGET=linux-$ARCH
[ "$ARCH" = aarch64 ] && OPENSSL_TARGET=linux-aarch64

build_openssl() {
    local dir=$1
    # Only libssl and libcrypto (build_libs: no apps, tests or docs), TLS 1.2/1.3 client use.
    # no-dso: a static binary cannot load engines or providers anyway; no-afalgeng: no kernel
    # crypto sockets under the seccomp filter. OPENSSLDIR is never read for trust (clrattach
    # always names its CA file) and points where a distribution would have it.
    (cd "$dir" && run openssl ./Configure "$OPENSSL_TARGET" --prefix="$PREFIX" --libdir=lib \
        --openssldir=/etc/ssl no-shared no-dso no-engine no-afalgeng no-tests \
        no-legacy no-comp no-ssl3 no-tls1 no-tls1_1 no-dtls no-srp no-idea no-rc5 no-md2 \
        no-mdc2 no-whirlpool no-camellia no-seed no-sm2 no-sm3 no-sm4 no-ct no-cms \
        $COMMON_CFLAGS -I"$PREFIX/include")
    run openssl make -C "$dir" -j"$JOBS" build_libs
    run openssl make -C "$dir" install_dev
}

build_jansson() {
    local dir=$1
    # Debian packages jansson's git tree, which has no generated configure script: its CMake
    # build avoids needing autoconf/automake/libtool.
    run jansson cmake -S "$dir" -B "$dir/_build" -DCMAKE_C_COMPILER="$CC" \
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
    # HTTPS only, with what clrattach uses (CA file, TLS 1.2+, no proxy from the environment).
    # No OpenSSL config file is loaded: nothing in it could help a static binary, and
    # OPENSSL_CONF would otherwise be read from the environment.
    # No threaded resolver: musl's getaddrinfo has its own timeouts, the API address is
    # normally an IP (KUBERNETES_SERVICE_HOST), and one thread fewer means no clone() to allow.
    (cd "$dir" && run curl ./configure --host="$TRIPLET" --prefix="$PREFIX" \
        --disable-shared --enable-static \
        --with-openssl="$PREFIX" --without-gnutls --without-nss --without-mbedtls \
        --without-wolfssl \
        --without-ca-bundle --without-ca-path --without-ca-fallback \
        --disable-threaded-resolver --without-zlib --without-brotli --without-zstd \
        --without-libpsl --without-libidn2 --without-nghttp2 --without-nghttp3 \
        --without-ngtcp2 --without-libssh2 --without-libssh --without-librtmp \
        --without-gssapi --disable-ldap --disable-ldaps --disable-rtsp --disable-dict \
        --disable-telnet --disable-tftp --disable-pop3 --disable-imap --disable-smb \
        --disable-smtp --disable-gopher --disable-mqtt --disable-ftp --disable-file \
        --disable-ntlm --disable-ntlm-wb --disable-kerberos-auth --disable-negotiate-auth \
        --disable-cookies --disable-alt-svc --disable-hsts --disable-netrc --disable-manual \
        --disable-unix-sockets --disable-websockets --disable-openssl-auto-load-config \
        CFLAGS="$COMMON_CFLAGS" CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib")
    run curl make -C "$dir/lib" -j"$JOBS" install
    run curl make -C "$dir/include" install
    # The build must not have found anything we did not ask for (a host library would not link
    # statically anyway, but the failure would be far from its cause).
    grep -q '^#define USE_OPENSSL 1' "$dir/lib/curl_config.h" || die "curl: OpenSSL not enabled"
    if grep -qE '^#define (USE_MBEDTLS|USE_GNUTLS|USE_NGHTTP2|HAVE_LIBZ|USE_LIBPSL|USE_LIBIDN2|USE_THREADS_POSIX) 1' \
        "$dir/lib/curl_config.h"; then
        die "curl: configure enabled an unwanted feature (see $dir/lib/curl_config.h)"
    fi
}

ensure_deb_src
kernel_headers

start=$(date +%s)
# Order matters: curl links against OpenSSL.
for pkg in openssl jansson libseccomp curl; do
    newest=$(src_versions "$pkg" | head -n1)
    [ -n "$newest" ] || die "no Debian source for $pkg"
    if built "$pkg" "$newest"; then
        continue
    fi
    : >"$LOG/$pkg.build"
    fetch "$pkg"
    say "building $pkg $FETCHED_VER"
    "build_$pkg" "$FETCHED_DIR"
    echo "$FETCHED_VER recipe $RECIPE newest $newest" >"$DEPS/$pkg.stamp"
done
say "dependencies ready ($(($(date +%s) - start)) s)"

# musl before 1.2.5 (Debian bookworm ships 1.2.3) has no renameat2() wrapper, which
# lib/deliver.c uses for RENAME_NOREPLACE. Rather than a musl-only branch in the sources, the
# static build gets the missing wrapper as a raw syscall; it is only added when the libc lacks it.
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
    LDLIBS_TOOL="-lcurl -lssl -lcrypto -ljansson -lseccomp $COMPAT_LIBS" \
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
