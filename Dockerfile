# syntax=docker/dockerfile:1
# clrattach image: a static binary and the sample profilers, nothing else (no shell, no libc,
# no CA bundle: the API server's CA always comes from the service-account volume).
#   docker build -t registry.example.com/clrattach:$(cat VERSION) .           (linux/amd64)
#   scripts/build-image.sh  (make image): linux/amd64 + linux/arm64 as one OCI image index
# The builder is Debian bookworm, the release whose sources scripts/build-static.sh builds the
# static libraries from (curl, wolfSSL, jansson, libseccomp, with Debian's security patches).
# It always runs on the build platform (amd64) and cross-compiles for the target platform:
# nothing runs under emulation. A builder that sets no platform arguments (docker's classic
# builder) builds linux/amd64.

FROM --platform=${BUILDPLATFORM:-linux/amd64} debian:bookworm AS builder
# build-essential brings linux-libc-dev (the kernel headers copied for musl); dpkg-dev is
# `apt-get source` (and brings `patch`); cmake builds jansson and wolfSSL, gperf libseccomp's
# syscall table. The aarch64 cross gcc, its binutils and the arm64 libc, kernel headers and
# musl build the arm64 binary and profilers. libseccomp-dev and libjansson-dev are for the
# build host's seccomp program generator (tools/sandbox_gen.c), never linked into the image.
RUN dpkg --add-architecture arm64 \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential musl-tools dpkg-dev cmake gperf perl pkg-config file ca-certificates \
        gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev:arm64 linux-libc-dev:arm64 \
        musl-dev:arm64 libseccomp-dev libjansson-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# static: build/static/clrattach (+ .stripped) for the target platform; every sample profiler,
# whatever the platform, so /profilers is one bundle (docs/bundles.md): glibc for glibc-based
# app images (Debian, Ubuntu, the official .NET images), musl for Alpine-based ones, x64 and
# arm64 each.
ARG TARGETARCH
RUN make static ARCH=${TARGETARCH:-amd64} STATIC_OUT=/src/build/static \
        build/libclrprobe.so build/musl/libclrprobe.so \
        build/arm64/libclrprobe.so build/arm64/musl/libclrprobe.so \
 && file build/static/clrattach.stripped | grep -q 'statically linked'

FROM scratch
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="clrattach" \
      org.opencontainers.image.description="Attach a profiler to a running .NET (CoreCLR) process across container boundaries; reports a Kubernetes Event" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/clrattach/clrattach" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="scratch"
COPY --from=builder /src/build/static/clrattach.stripped /clrattach
COPY --from=builder /src/build/libclrprobe.so /profilers/linux-x64/libclrprobe.so
COPY --from=builder /src/build/musl/libclrprobe.so /profilers/linux-musl-x64/libclrprobe.so
COPY --from=builder /src/build/arm64/libclrprobe.so /profilers/linux-arm64/libclrprobe.so
COPY --from=builder /src/build/arm64/musl/libclrprobe.so /profilers/linux-musl-arm64/libclrprobe.so
# The pod spec sets the app's uid (runAsUser); this is only the non-root default
# (65532, "nonroot" in distroless images).
USER 65532:65532
ENTRYPOINT ["/clrattach"]
